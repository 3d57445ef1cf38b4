"""Committed model artefacts (package data), and the one place their paths are resolved.

One folder per kind: ``encoders/`` (query-tower adapters), ``rerankers/`` (reranker adapters),
``calibration/`` (a confidence calibrator per retrieval configuration), ``verdict/`` (the verdict
head), ``checkworthiness/`` (the check-worthiness head over the posts' embeddings). One convention: artefact ``NAME`` of a kind is ``<kind>/NAME.json``, its manifest (what it
is, the base model, what it was trained and measured on), plus ``<kind>/NAME.npz`` beside it when it
has arrays. The lab writes them; ``factsieve model build`` (``plugin.build``) merges the adapters
into the model cache; serving reads them through ``artefact_dir``.

Commands write artefacts and records outside the installed package, never into it
(``outside_package``): an install is read-only to its own commands (STYLE.md rule 7); a change to
what ships is a reviewed commit of the written file. The one convention: a command that trains or
chooses an artefact of a kind writes it by default to ``build/artefacts/<kind>/`` of the working
directory (``written_dir``; git-ignored in a checkout), laid out as here; to ship it, review it and
copy it over ``plugin/artefacts/<kind>/`` in a commit (docs/operating/models.md).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

ENCODERS = "encoders"
RERANKERS = "rerankers"
CALIBRATION = "calibration"
VERDICT = "verdict"
CHECKWORTHINESS = "checkworthiness"
KINDS = (ENCODERS, RERANKERS, CALIBRATION, VERDICT, CHECKWORTHINESS)
#: Where commands write the artefacts they train or choose, relative to the working directory.
WRITTEN = Path("build") / "artefacts"


def artefact_dir(kind: str) -> Path:
    """The committed folder of ``kind`` (one of ``KINDS``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown artefact kind {kind!r}; expected one of {', '.join(KINDS)}")
    return Path(str(resources.files(__name__).joinpath(kind)))


def written_dir(kind: str) -> Path:
    """``build/artefacts/<kind>/``: where a command writes an artefact of ``kind`` by default (the
    packaged folder's layout, outside the package)."""
    artefact_dir(kind)  # the kind check
    return WRITTEN / kind


def artefact_path(kind: str, name: str, suffix: str = ".json") -> Path:
    """``<kind>/NAME.json`` (the manifest) or, with ``suffix=".npz"``, its arrays."""
    return artefact_dir(kind) / f"{name}{suffix}"


def package_root() -> Path:
    """The installed ``plugin`` package's folder (the source tree's, in an editable install)."""
    return Path(str(resources.files("plugin"))).resolve()


def outside_package(path: Path, flag: str) -> Path:
    """``path`` when it lies outside the installed package, else ``BadInput`` naming ``flag`` (the
    option that chose it): the one check every command that writes a file makes first."""
    from plugin.errors import BadInput

    resolved = Path(path).resolve()
    if resolved == package_root() or package_root() in resolved.parents:
        raise BadInput(f"{flag} {str(path)!r} is inside the installed package: write it elsewhere "
                       f"(records/ or a work folder) and commit a change to the packaged file by hand")
    return Path(path)
