"""No command writes into the installed package, by default or by accident (STYLE.md rule 7,
issue 36 item 5), checked as a class: every option of every ``factsieve`` command through which
it writes a file or folder is one ``main`` checks (``cli.common.OUTPUTS``), defaults outside the
package (``build/artefacts/<kind>/`` for an artefact: ``plugin.artefacts.written_dir``), and a
path inside the package is refused with exit 2 before the command runs."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from plugin.artefacts import (CALIBRATION, ENCODERS, RERANKERS, VERDICT, artefact_dir, artefact_path,
                              outside_package, package_root, written_dir)
from plugin.errors import BadInput

from cli.common import OUTPUTS
from cli.main import build_parser, main

#: What an option that writes is called; a boolean switch (``evaluate --record``) names no path.
WRITES = re.compile(r"^--(out|output|write|records?)(-|$)")

#: Where each artefact a command trains or chooses goes when ``--out`` is not given.
ARTEFACT_DEFAULTS = {
    ("calibrate", "--out"): Path("build/artefacts/calibration"),
    ("train-query-encoder", "--out"): Path("build/artefacts/encoders"),
    ("train-reranker lora", "--out"): Path("build/artefacts/rerankers"),
    ("train-reranker distil", "--out"): Path("build/artefacts/rerankers"),
    ("train-reranker lora-import", "--out"): Path("build/artefacts/rerankers"),
    ("train-verdict", "--out"): Path("build/artefacts/verdict"),
}
#: Optional writing options whose absence writes nothing there, and why.
NO_DEFAULT = {
    ("blend-weight choose", "--write"): "the table is written only when asked",
    ("train-reranker distil", "--teacher-cache"): "the teacher's logits go to the temp folder",
}


def output_options() -> list[tuple[str, str, argparse.Action]]:
    """``(command, flag, action)`` for every option of every command that names a path written."""
    found = []

    def walk(parser: argparse.ArgumentParser, command: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*command, name))
            elif action.nargs != 0:  # switches take no value: no path
                for flag in action.option_strings:
                    if WRITES.match(flag) or flag in OUTPUTS.values():
                        found.append((" ".join(command), flag, action))

    walk(build_parser(), ())
    return found


def test_the_walk_finds_the_training_commands():
    seen = {(command, flag) for command, flag, _ in output_options()}
    assert set(ARTEFACT_DEFAULTS) | set(NO_DEFAULT) | {("evaluate", "--records")} <= seen
    assert len(seen) >= 17  # the 17 there are today


def test_every_output_option_is_one_main_checks():
    unchecked = [f"{command} {flag} (dest {action.dest!r})" for command, flag, action in output_options()
                 if OUTPUTS.get(action.dest) != flag]
    assert not unchecked, f"name these options as cli.common.OUTPUTS does: {unchecked}"


def test_every_output_option_defaults_outside_the_package():
    for command, flag, action in output_options():
        where = f"factsieve {command} {flag}"
        if action.required:
            assert action.default is None, where
        elif (command, flag) in NO_DEFAULT:
            assert action.default is None, f"{where}: {NO_DEFAULT[command, flag]}"
        else:
            assert action.default is not None, f"{where} has no default: give it one outside the package"
            assert outside_package(Path(action.default), flag) == Path(action.default)
            assert package_root() not in (Path.cwd() / action.default).resolve().parents, where
        if (command, flag) in ARTEFACT_DEFAULTS:
            assert action.default == ARTEFACT_DEFAULTS[command, flag], where


def test_artefact_defaults_mirror_the_packaged_layout_outside_it():
    for kind in (ENCODERS, RERANKERS, CALIBRATION, VERDICT):
        assert written_dir(kind) == Path("build") / "artefacts" / kind
        assert artefact_dir(kind).name == kind and artefact_dir(kind).parent.name == "artefacts"
    with pytest.raises(ValueError, match="unknown artefact kind"):
        written_dir("models")


@pytest.mark.parametrize("argv, flag", [
    (["train-query-encoder", "--out", str(artefact_dir(ENCODERS))], "--out"),
    (["train-reranker", "lora", "--groups", "g.jsonl", "--out", str(artefact_dir(RERANKERS))], "--out"),
    (["train-reranker", "lora-import", "--from", ".", "--name", "x", "--out", str(artefact_dir(RERANKERS))], "--out"),
    (["calibrate", "--out", str(artefact_path(CALIBRATION, "factsieve"))], "--out"),
    (["train-verdict", "--out", str(artefact_dir(VERDICT))], "--out"),
    (["evaluate", "--record", "--records", str(package_root() / "search" / "configs" / "records.json")], "--records"),
    (["blend-weight", "choose", "--llm-ratings", "r", "--oof", "o", "--write",
      str(package_root() / "verify" / "configs" / "blend.json")], "--write"),
])
def test_a_path_inside_the_package_is_refused_before_the_command_runs(argv, flag, capsys, monkeypatch):
    def ran(*_a, **_k):
        raise AssertionError("the command ran")

    monkeypatch.setattr("cli.main.Settings", ran)  # refused before the settings are even built
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag} " in err and "inside the installed package" in err and "commit" in err


def test_a_default_resolved_inside_the_package_is_refused_too(capsys, monkeypatch):
    # a relative default is the working directory's: run from inside the package, it is refused
    monkeypatch.chdir(package_root())
    assert main(["train-query-encoder"]) == 2
    assert "--out 'build/artefacts/encoders' is inside the installed package" in capsys.readouterr().err


def test_the_lab_refuses_the_package_before_it_trains(tmp_path):
    from plugin.lab.calibrate import calibrate
    from plugin.lab.query_tower import train_query_encoder
    from plugin.lab.reranker.distil import train_distilled_reranker
    from plugin.lab.reranker.export import output_dir
    from plugin.lab.reranker.lora import train_lora_reranker
    from plugin.lab.reranker.lora_pack import import_adapter
    from plugin.lab.verdict import train_verdict
    from plugin.lab.verdict_xenc import train_verdict_xenc
    from plugin.settings import Settings

    settings = Settings(_env_file=None, cache_dir=tmp_path)
    inside = artefact_dir(RERANKERS)
    before = sorted(p.name for p in inside.iterdir())
    for call in (lambda: train_query_encoder(settings, tmp_path, "x", artefact_dir(ENCODERS)),
                 lambda: train_lora_reranker(settings, None, "x", inside),
                 lambda: train_distilled_reranker(settings, None, "teacher", "x", inside),
                 lambda: import_adapter(settings, None, tmp_path, "x", "y", inside),
                 lambda: output_dir(str(inside / "x"), settings),
                 lambda: calibrate(None, None, settings, None, None, out=artefact_path(CALIBRATION, "x")),
                 lambda: train_verdict(None, {}, out=artefact_dir(VERDICT)),
                 lambda: train_verdict_xenc(settings, {}, out=artefact_dir(VERDICT), name="x")):
        with pytest.raises(BadInput, match="--out .* is inside the installed package"):
            call()
    assert sorted(p.name for p in inside.iterdir()) == before
