"""The system packages FactSieve relies on are all in ``scripts/system-packages.txt``, which the
bootstrap installs: the class "installed by hand once, so CI cannot see it missing".

The static tests read the source: every absolute system path and every external command the
code, tests, scripts and docs name must be provided by a listed package. The last test runs
after the bootstrap (``make up``) and asks dpkg: every listed package is installed, every listed
path that exists belongs to the package that lists it, every listed command is found, and every
command the shell scripts run is listed or comes with every Debian system (priority required).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from plugin.settings import Settings
from tests.conftest import ROOT

LIST = ROOT / "scripts" / "system-packages.txt"
#: where paths and commands are named: the code, the tests, the scripts, the docs
SCANNED = ("plugin", "api", "workers", "cli", "tests", "scripts", "docs", "index_templates")
TOP_FILES = ("Makefile", "README.md", "mkdocs.yml", ".ci/run")
SUFFIXES = {".py", ".sh", ".md", ".yml", ".yaml", ".json", ".toml", ".txt", ".html", ".js", ".cfg", ""}
#: paths every Debian system has (packages of priority required; the last test checks that), and
#: the files tests name to show that a local path is refused
ESSENTIAL = {"/usr/bin/env", "/bin/bash", "/usr/sbin/nologin", "/etc/passwd", "/etc/hostname"}
#: a system path: not part of a longer path (``extract/usr/share/...`` is a .deb we unpacked,
#: ``$(VENV)/bin/python`` the venv's). The Dockerfile and docker-compose.yml name their images'
#: paths, not this machine's, and are not read.
PATH_RE = re.compile(r"(?<![\w./~$)}*-])/(?:usr|etc|opt|lib|lib64|bin|sbin)/[\w.+\-/]*[\w/]")
PY_COMMAND_RE = re.compile(r"""(?:subprocess\.\w+\(\s*\[\s*|shutil\.which\(\s*)["']([\w.+-]+)["']""")
SH_COMMAND_RE = re.compile(r"command -v ([\w.+-]+)")


@dataclass(frozen=True)
class Package:
    name: str
    provides: tuple[str, ...]  # absolute paths (a trailing / covers a folder) and command names
    why: str


def listed() -> list[Package]:
    out = []
    for line in LIST.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        name, provides, why = (part.strip() for part in line.split("|"))
        out.append(Package(name, tuple(provides.split()), why))
    return out


def sources() -> list[Path]:
    files = [ROOT / f for f in TOP_FILES if (ROOT / f).exists()]
    for top in SCANNED:
        files += [p for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix in SUFFIXES
                  and "__pycache__" not in p.parts and p not in (LIST, Path(__file__).resolve())]
    return files


def provided(thing: str, packages: list[Package]) -> bool:
    for pkg in packages:
        for p in pkg.provides:
            if thing == p or (p.endswith("/") and (thing + "/").startswith(p)):
                return True
    return False


def test_the_list_is_well_formed():
    packages = listed()
    names = [p.name for p in packages]
    assert len(names) == len(set(names)), "a package listed twice"
    for pkg in packages:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", pkg.name), pkg.name
        assert pkg.provides and pkg.why, f"{pkg.name}: say what it provides and what for"


def test_every_system_path_the_code_names_comes_from_a_listed_package():
    packages = listed()
    missing = {}
    for f in sources():
        text = f.read_text(encoding="utf-8", errors="replace")
        for m in PATH_RE.finditer(text):
            path = m.group(0).rstrip("/")
            if path not in ESSENTIAL and not provided(path, packages):
                missing.setdefault(path, f.relative_to(ROOT).as_posix())
    assert not missing, f"named, but no line of {LIST.name} provides them: {missing}"


def test_every_external_command_the_code_runs_comes_from_a_listed_package():
    packages = listed()
    python = Path(shutil.which("python3") or "python3").name
    missing = {}
    for f in sources():
        text = f.read_text(encoding="utf-8", errors="replace")
        found = PY_COMMAND_RE.findall(text) if f.suffix == ".py" else SH_COMMAND_RE.findall(text)
        for cmd in found:
            if cmd not in (python, "python") and not provided(cmd, packages):
                missing.setdefault(cmd, f.relative_to(ROOT).as_posix())
    assert not missing, f"run, but no line of {LIST.name} provides them: {missing}"


def test_the_default_ocr_languages_have_their_packs_listed():
    names = {p.name for p in listed()}
    default = Settings.model_fields["ocr_languages"].default
    packs = {f"tesseract-ocr-{lang.lower().replace('_', '-')}" for lang in default}
    assert packs <= names, f"packs of the default FACTSIEVE_OCR_LANGUAGES not listed: {packs - names}"
    assert "tesseract-ocr-script-latn" in names


def test_the_bootstrap_reads_the_list():
    script = ROOT / "scripts" / "system-packages.sh"
    out = subprocess.run([str(script), "--list"], capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    assert set(out.stdout.split()) == {p.name for p in listed()}
    assert "system-packages.sh" in (ROOT / "Makefile").read_text() and "system-packages.sh" in (
        ROOT / "scripts" / "services.sh").read_text()


# -- after the bootstrap --------------------------------------------------------------------------

def _dpkg_owners(path: str) -> set[str]:
    done = subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True)
    owners: set[str] = set()
    for line in done.stdout.splitlines():
        pkgs, _, owned = line.rpartition(": ")
        if owned.rstrip("/") == path.rstrip("/"):
            owners |= {p.strip().split(":")[0] for p in pkgs.split(",")}
    return owners


def _required() -> set[str]:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Priority}\n"], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.endswith(" required")}


def _shell_commands(text: str) -> set[str]:
    """Words in a command's position in a shell script (crude, but what it finds is checked)."""
    words: set[str] = set()
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        line = re.sub(r"'[^']*'|\"[^\"]*\"", "''", line.split(" #", 1)[0])
        words |= set(re.findall(r"(?:^|[|;&(]|\$\(|\bthen\b|\bdo\b|\belse\b)\s*([a-z][\w.+-]*)(?=\s|$)", line))
    return words


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian system: nothing to ask dpkg")
def test_after_the_bootstrap_every_listed_package_is_installed_and_owns_what_it_lists():
    packages = listed()
    status = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\n",
                             *[p.name for p in packages]], capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in status.splitlines() if line.split()[1:2] == ["ii"]}
    assert not {p.name for p in packages} - installed, "run scripts/system-packages.sh (make up does)"
    wrong, unfound = {}, []
    for pkg in packages:
        for thing in pkg.provides:
            if thing.startswith("/"):
                if Path(thing).exists() and pkg.name not in _dpkg_owners(thing):
                    wrong[thing] = (pkg.name, sorted(_dpkg_owners(thing)))
            elif shutil.which(thing) is None:
                unfound.append(f"{thing} ({pkg.name})")
    assert not wrong, f"listed under a package that does not own them (path: (listed, dpkg -S)): {wrong}"
    # /etc/passwd and /etc/hostname are written by the installer, owned by no package
    owned = {p: _dpkg_owners(p) | _dpkg_owners(str(Path(p).resolve())) for p in ESSENTIAL - {"/etc/passwd", "/etc/hostname"}}
    not_essential = {p: sorted(o) for p, o in owned.items() if not o & _required()}
    assert not not_essential, f"named as on every Debian system, but not from a required package: {not_essential}"
    assert not unfound, f"commands not found after the bootstrap: {unfound}"
    # the shell scripts' commands: listed, or from a package every Debian system has
    required, unlisted = _required(), {}
    for script in [*(ROOT / "scripts").glob("*.sh"), ROOT / ".ci" / "run"]:
        for cmd in _shell_commands(script.read_text(encoding="utf-8")):
            where = shutil.which(cmd)
            if where is None or provided(cmd, packages):
                continue
            owners = _dpkg_owners(where) or _dpkg_owners(str(Path(where).resolve()))
            if owners and not owners & required:
                unlisted[cmd] = (script.name, sorted(owners))
    assert not unlisted, f"the scripts run commands from unlisted packages: {unlisted}"
