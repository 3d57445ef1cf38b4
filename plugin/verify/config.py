"""Named verification configurations (``configs/verification.json``): data, like the retrieval
configurations, each with the strategy it runs and its knobs.

- ``lookup``: the previously-fact-checked stage alone: the best-matching published fact-check
  answers the claim when its match's confidence clears ``lookup_min_confidence`` (or, without a
  confidence model, its kNN similarity clears ``lookup_min_score``); otherwise Not Enough Evidence.
- ``qa-loop`` (REVEAL / InFact): lookup first; otherwise up to ``max_turns`` of next question →
  HyDE passage → hybrid evidence retrieval → grounded answer → evidence summary, stopping once the
  summary's top label rating reaches ``decisive_at``; then the verdict from the QA pairs.
- ``single-call`` (FEVER-8 winner's shape): lookup first; otherwise the top ``passages`` for the
  claim (at most ``per_url`` from one page) and one call returning QA pairs, ratings, verdict.
- ``head``: no LLM: the verdict head (a small classifier on the packaged encoder) over the
  evidence.
- ``cited``: no LLM: lookup first; otherwise the top ``candidates`` passages for the claim, of
  which ``passages`` are kept (at most ``per_url`` from one page, then MMR with ``mmr_lambda``
  when set); the verdict model's verdict over them, each passage's stance from the same model,
  and a justification quoting the strongest supporting and refuting passages with their numbers
  (``cited.py``).

A configuration may name a ``"base"`` configuration and inherits the fields it does not set
(``resolve_bases``): the lookup thresholds are written once, in ``lookup``. How they were set:
``docs/design/verification.md``.
"""
from __future__ import annotations

import json
from enum import Enum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plugin.errors import BadInput


class Strategy(str, Enum):
    LOOKUP = "lookup"
    QA_LOOP = "qa-loop"
    SINGLE_CALL = "single-call"
    HEAD = "head"
    CITED = "cited"


class VerificationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    strategy: Strategy
    #: the retrieval configuration the lookup matches fact-checks with
    retrieval: str | None = None
    #: a published rating answers the claim when the best match's similarity (its kNN score,
    #: (1 + cos) / 2) reaches this; ``None`` skips the lookup. Measured on data:
    #: ``docs/design/verification.md``.
    lookup_min_score: float | None = None
    #: a published rating answers the claim when the best match's calibrated confidence
    #: (``plugin.search.calibration``) reaches this; checked before ``lookup_min_score``, which
    #: serves retrieval configurations without a confidence model.
    lookup_min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    max_turns: int = Field(default=5, ge=1, le=20)
    passages_per_question: int = Field(default=3, ge=1, le=20)
    hyde: bool = True
    decisive_at: float = Field(default=0.8, ge=0.0, le=1.0)
    passages: int = Field(default=10, ge=1, le=50)
    per_url: int = Field(default=2, ge=1, le=50)
    #: cited: passages retrieved before selection (``passages`` of them are kept)
    candidates: int = Field(default=20, ge=1, le=100)
    #: cited: Maximal Marginal Relevance's trade-off (1 = relevance only, 0 = diversity only);
    #: ``None``: no MMR, the first ``passages`` under the per-URL cap
    mmr_lambda: float | None = Field(default=None, ge=0.0, le=1.0)
    #: single-call: at most this many question–answer pairs (the schema says so too); fewer
    #: when ``max_tokens`` is small, so that the whole answer fits
    max_pairs: int = Field(default=10, ge=1, le=10)
    fewshot: int = Field(default=1, ge=0, le=8)
    budget_s: float = Field(default=60.0, gt=0, le=3600)
    #: LLM strategies: the verdict model's weight ``w`` in the verdict ``(1 − w)·llm + w·model``
    #: (0: the LLM's own verdict). ``None``: the weight recorded for the configured LLM
    #: (``plugin.verify.blend``, ``configs/blend.json``); a number here overrides it.
    head_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    max_tokens: int = Field(default=384, ge=16, le=8192)


def packaged_path() -> Path:
    return Path(str(resources.files("plugin.verify").joinpath("configs/verification.json")))


def resolve_bases(bodies: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each configuration's fields over those of the configuration its ``"base"`` names (and that
    one's base, and so on), without the ``base`` key. A base that is not there, or a chain that
    comes back to where it started, is refused with the chain."""
    resolved: dict[str, dict[str, Any]] = {}

    def resolve(name: str, chain: tuple[str, ...]) -> dict[str, Any]:
        if name in resolved:
            return resolved[name]
        if name in chain:
            raise BadInput(f"verification configurations inherit in a cycle: {' -> '.join((*chain, name))}")
        body = dict(bodies[name])
        base = body.pop("base", None)
        if base is not None:
            if base not in bodies:
                raise BadInput(f"verification configuration {name!r} names the base {base!r}, "
                               f"which is not one of: {', '.join(bodies)}")
            body = {**resolve(base, (*chain, name)), **body}
        resolved[name] = body
        return body

    return {name: resolve(name, ()) for name in bodies}


@cache
def _parse(path: str) -> tuple[str, dict[str, VerificationConfig]]:
    """The default name and the resolved configurations of the file at ``path``, parsed once per
    process."""
    raw: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        configs = {name: VerificationConfig(name=name, **body)
                   for name, body in resolve_bases(raw["configs"]).items()}
    except ValidationError as exc:
        raise BadInput(f"invalid verification configuration: {exc.errors()[0]['loc']}: "
                       f"{exc.errors()[0]['msg']}") from None
    return raw["default"], configs


def load_configs(path: Path | None = None) -> dict[str, VerificationConfig]:
    return dict(_parse(str(path or packaged_path()))[1])


def default_name(path: Path | None = None) -> str:
    return _parse(str(path or packaged_path()))[0]


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items (``--set``) as configuration fields: VALUE is read as JSON (``0.7``,
    ``null``, ``true``), else kept as text."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--set takes KEY=VALUE, not {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def with_overrides(cfg: VerificationConfig, changes: dict[str, Any]) -> VerificationConfig:
    """``cfg`` with ``changes`` applied and validated like the file's fields (an unknown field
    or a value out of range is refused, naming it)."""
    fixed = {"name", "strategy"} & set(changes)
    if fixed:
        raise BadInput(f"--set cannot change {', '.join(sorted(fixed))}: name another configuration")
    try:
        return VerificationConfig.model_validate({**cfg.model_dump(), **changes})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInput(f"--set {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def verification_config(name: str | None = None, path: Path | None = None) -> VerificationConfig:
    """The named verification configuration (the file's default when ``None``); not the
    matcher's ``plugin.search.retrieval.retrieval_config``."""
    configs = load_configs(path)
    name = name or default_name(path)
    if name not in configs:
        raise BadInput(f"unknown verification configuration {name!r}; known: {', '.join(configs)}")
    return configs[name]
