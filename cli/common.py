"""What every command shares: JSON output, date and list arguments, printing matches, choosing
retrieval configurations and fusion paths, and the check on the paths a command writes."""
from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput

if TYPE_CHECKING:
    from plugin.search.result import Match
    from plugin.search.retrieval import RetrievalConfig
    from plugin.service.services import Services

#: Evaluation and benchmark commands read this dataset when ``--dataset`` is not given.
DEFAULT_DATASET = Path("../shared/data/clef2020_task2")
#: Verification evaluations and the lookup threshold read AVeriTeC claims from here by default.
DEFAULT_AVERITEC = Path("../shared/data/averitec_dev")


#: The options through which a command writes a file or folder, by ``dest``: ``main`` refuses
#: each inside the installed package before the command runs (STYLE.md rule 7; its default lies
#: outside: ``build/artefacts/<kind>/`` for an artefact, ``records/`` for scores). A new
#: writing option takes one of these names (tests/unit/cli/test_output_paths.py holds them to it).
OUTPUTS = {"out": "--out", "output": "--output", "write": "--write", "records": "--records",
           "work_dir": "--work-dir", "teacher_cache": "--teacher-cache"}


def check_outputs(args: argparse.Namespace) -> None:
    """``BadInput`` naming the option when a path the command would write lies inside the
    installed package (``plugin.artefacts.outside_package``), before anything runs."""
    from plugin.artefacts import outside_package

    for dest, flag in OUTPUTS.items():
        value = getattr(args, dest, None)
        if isinstance(value, (str, Path)) and str(value):
            outside_package(Path(value), flag)


def dump(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def parse_date(value: str | None, flag: str = "--date") -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadInput(f"{flag} must be YYYY-MM-DD, got {value!r}") from None


def dataset_path(given: Path | None, what: str = "") -> Path:
    """``--dataset`` or the default, refused with the fix when the folder is not there."""
    path = given or DEFAULT_DATASET
    if not path.exists():
        raise BadInput(f"dataset folder {str(path)!r} not found: pass --dataset DIR{what}")
    return path


def add_tenant_flag(parser: Any) -> None:
    """``--tenant``: the tenant a write command acts for (``plugin.owners``)."""
    parser.add_argument("--tenant", default="default",
                        help="write as this tenant: its documents may be updated, another "
                             "tenant's are rejected (default: default, the owner of documents "
                             "stored before owners were recorded)")


def writer_of(args: Any) -> Any:
    """The ``Writer`` a command's ``--tenant`` names (checked like a key's tenant)."""
    from plugin.owners import Writer
    from plugin.service.keys import check_tenant

    return Writer(tenant=check_tenant(args.tenant))


#: what the number before each match is, said once above the matches
CONFIDENCE_LEGEND = ("  confidence: the calibrated chance that the fact-check addresses the post "
                     "(the fused score is in --json)")
SCORE_LEGEND = "  [score]: the fused ranking score (this configuration has no confidence model)"


def match_lines(result: Match) -> list[str]:
    """A match result as the CLI prints it. Each match leads with its calibrated confidence, the
    number a person can act on (0.97 means about 97 in 100 such matches address the post), where
    the configuration has a confidence model; otherwise with the fused score in brackets, which
    only orders the matches. A legend line says which."""
    lines = [f"  language: {result.lang or '?'}   ({result.took_ms:.0f} ms)"]
    image = result.image
    matches = [c.to_dict() for c in result.candidates]
    if image is not None:
        text = " ".join(((image.get("ocr") or {}).get("text") or "").split())
        lines.append(f"  text read from the image: {text!r}" if text else "  text read from the image: none")
    if not matches:
        lines.append("  no matches")
    calibrated = bool(matches) and all(m.get("confidence") is not None for m in matches)
    if matches:
        lines.append(CONFIDENCE_LEGEND if calibrated else SCORE_LEGEND)
    for m in matches:
        extra = ", ".join(x for x in (m.get("lang"), m.get("rating"), m.get("url")) if x)
        lead = f"{m['confidence']:.3f}" if calibrated else f"[{m['score']:.4f}]"
        lines.append(f"  {m['rank']:>2}. {lead} {m['claim']}" + (f"  ({extra})" if extra else ""))
        if image is not None:
            lines.append(f"      found by: {signal_words(m.get('signals') or [])}")
    lines += [f"  note: {note}" for note in result.notes]
    return lines


def print_matches(result: Match, header: str | None = None) -> None:
    if header:
        print(header)
    print("\n".join(match_lines(result)))


def signal_words(signals: list[dict[str, Any]]) -> str:
    """A match's signals in words: ``same image (distance 4), ocr, text``."""
    return ", ".join(f"same image (distance {s['distance']})" if s["signal"] == "same-image"
                     else s["signal"] for s in signals) or "?"


def split_names(value: str) -> list[str]:
    """A comma-separated flag's items."""
    return [x.strip() for x in value.split(",") if x.strip()]


def select_configs(path: Path | None, names: str | None) -> dict[str, RetrievalConfig]:
    """The configurations of ``path`` (default: the packaged file) named by ``--config
    NAME[,NAME...]``, in that order; all of them without names. An unknown name is refused with
    the known ones, by every command that takes ``--config``."""
    from plugin.search.retrieval import load_configs

    configs = load_configs(path)
    if not names:
        return configs
    wanted = [c.strip() for c in names.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in configs]
    if unknown:
        raise BadInput(f"unknown configuration(s) {unknown}; known: {', '.join(configs)}")
    return {c: configs[c] for c in wanted}


FUSION_PATHS = {"settings": None, "client": ("client",), "server": ("server",), "both": ("client", "server")}


def by_fusion(args: argparse.Namespace, services: Services, configs: dict[str, RetrievalConfig],
              run: Any) -> dict[str, Any]:
    """``run(settings)`` on each fusion path ``--fusion`` asks for, on the same index and
    queries. One path: its result with ``"fusion"`` naming it; ``both``: ``{"client": …,
    "server": …}``. The server path needs neural-search, and installs the configurations'
    pipelines first (as ``factsieve init`` does): a match never writes one."""
    paths = FUSION_PATHS[args.fusion]
    if paths is None:
        return {**run(services.settings), "fusion": "server" if services.settings.server_fusion else "client"}
    if "server" in paths:
        from plugin.search.hybrid import NEURAL_PLUGIN

        if NEURAL_PLUGIN not in services.store.plugins():
            raise BadInput("--fusion server needs the neural-search plugin on the cluster "
                           "(`make up` installs it; the official Docker image ships it)")
        services.deployment.search_pipelines(list(configs.values()))
    results = {p: {**run(services.settings.model_copy(update={"server_fusion": p == "server"})),
                   "fusion": p} for p in paths}
    return results[paths[0]] if len(paths) == 1 else results


def add_fusion_flag(sp: Any) -> None:
    sp.add_argument("--fusion", choices=list(FUSION_PATHS), default="settings",
                    help="client (_msearch + fusion here), server (hybrid query + neural-search pipeline), "
                         "both (side by side), or settings (FACTSIEVE_SERVER_FUSION; the default)")
