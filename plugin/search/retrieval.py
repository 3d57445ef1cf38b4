"""Named retrieval configurations: data, not code paths.

Every configuration in ``plugin/search/configs/retrieval.json`` (bm25, dense, sieve, hybrid-rrf,
multiquery, hybrid-rerank, …) is run by the same ``Matcher``; a configuration only says which
retrievers run over which query variants, with what weights, how they are fused, and what is
done after fusion, plus a one-sentence description. What each one measured sits beside the
runtime, not in it (``records/retrieval.json``, written by ``evaluate --record``); the longer
account of each is ``docs/design/configurations.md``. A file is parsed once per process.
"""
from __future__ import annotations

import json
from enum import Enum
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from plugin.errors import BadInput


class RetrieverKind(str, Enum):
    BM25 = "bm25"
    DENSE = "dense"


class Fusion(str, Enum):
    RRF = "rrf"
    MINMAX = "minmax"


class Retriever(BaseModel):
    """One sub-query: a retriever over one query variant, with its fusion weight."""

    model_config = ConfigDict(extra="forbid")

    kind: RetrieverKind
    query: str = "post"
    weight: float = Field(default=1.0, ge=0)
    #: weight in crosslingual mode, when it differs (FactDebug: 8:2 mono, 1:1 cross)
    cross_weight: float | None = Field(default=None, ge=0)
    #: In crosslingual and auto mode, the retriever (``kind:query``) whose term stands in for this
    #: one's on fact-checks in another language than the post's, which this one is nearly blind
    #: to (BM25 reads the post in its own language): ``plugin.search.fuse.stand_in_terms``.
    stand_in: str | None = None

    @property
    def name(self) -> str:
        return f"{self.kind.value}:{self.query}"


class Rerank(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    top: int = Field(default=50, ge=1, le=1000)
    #: final score = rerank score, or a blend with the fused rank when < 1
    weight: float = Field(default=1.0, ge=0, le=1)
    #: when > 0: final score = the reranker's log-odds − rank_prior · ln(fused rank), the first
    #: stage's rank as a prior on what the cross-encoder read (``matcher.rank_prior_scores``)
    rank_prior: float = Field(default=0.0, ge=0, le=20)
    #: a head whose first candidate the first stage's confidence model gives at least this keeps
    #: the fused order (``rerank_gate.RerankGate``), on every path alike: reranking was measured to
    #: change next to nothing there (``factsieve train-reranker skip``), and its cost is better
    #: kept. ``None``: every head the gate allows is reranked.
    skip_at: float | None = Field(default=None, gt=0, le=1)

    @model_validator(mode="after")
    def _one_blend(self) -> Rerank:
        if self.rank_prior > 0 and self.weight < 1:
            raise ValueError("rerank: give either weight < 1 (a blend of probabilities with the "
                             "fused rank) or rank_prior > 0 (log-odds with a rank prior), not both")
        return self


class RetrievalConfig(BaseModel):
    #: frozen: the parsed configurations are shared by every caller (``load_configs`` caches them)
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    #: forced mode for this configuration (sieve is monolingual); None = the request's mode
    mode: str | None = None
    retrievers: list[Retriever]
    fusion: Fusion = Fusion.RRF
    rrf_k: int = Field(default=60, ge=0)
    candidates: int = Field(default=100, ge=1, le=10000)
    #: multiplicative boost per trusted domain/publisher (REVEAL used ×1.5)
    boosts: dict[str, float] = Field(default_factory=dict)
    #: collapse near-duplicate fact-checks of one claim (syndicated debunks) in the top k
    collapse: float | None = Field(default=None, gt=0, le=1)
    rerank: Rerank | None = None
    #: In crosslingual and auto mode, subtract this share of the post language's centroid from
    #: the query vector of every dense retriever (``plugin.search.centering``); 0 = off.
    language_centering: float = Field(default=0.0, ge=0, le=2)
    #: In auto mode, for a post whose language is detected, every retriever runs a second time
    #: restricted to fact-checks in that language, uncentred, at its monolingual weight times
    #: this (``own:<retriever>``, ``plugin.search.plan.MatchPlan``): an answer in the post's
    #: own language then ranks as it would in mono mode, and one in another language must beat
    #: it on the crosslingual sub-queries alone. 0 = off.
    own_language: float = Field(default=0.0, ge=0, le=10)
    #: The own-language pass's admission of a better answer in another language compares each
    #: fact-check's crosslingual score less this share of its own language's offset
    #: (``plugin.search.centering.language_offsets``: the fact-check's side of language
    #: centring); 0 = compared as scored.
    admission_centering: float = Field(default=0.0, ge=0, le=2)
    #: A query adapter (``plugin/artefacts/encoders/<name>``) whose tuned tower embeds the post for
    #: the dense retrievers; fact-check vectors stay the base encoder's, so any index serves it.
    query_encoder: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    #: whose packaged confidence model (``factsieve calibrate``) scores the matches: the
    #: configuration's own by default; a reranking configuration names its first stage's
    calibrator: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    #: For a post with an image, the text read from it runs every retriever again as a query set
    #: of its own (``ocr:<retriever>``, ``plugin.search.images``), each weight times this.
    ocr_weight: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _unique(self) -> RetrievalConfig:
        names = [r.name for r in self.retrievers]
        if not names:
            raise ValueError("a configuration needs at least one retriever")
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate retrievers: {names}")
        for r in self.retrievers:
            if r.stand_in is not None and (r.stand_in not in names or r.stand_in == r.name):
                raise ValueError(f"{r.name}'s stand_in {r.stand_in!r} is not another retriever "
                                 f"of this configuration: {names}")
        return self

    def stand_ins(self) -> dict[str, str]:
        """``{retriever: its stand-in}`` for the retrievers that have one."""
        return {r.name: r.stand_in for r in self.retrievers if r.stand_in}

    def weights(self, crosslingual: bool) -> dict[str, float]:
        return {r.name: (r.cross_weight if crosslingual and r.cross_weight is not None else r.weight)
                for r in self.retrievers}


def packaged_configs_path() -> Path:
    return Path(str(resources.files("plugin.search").joinpath("configs/retrieval.json")))


@cache
def _parse(path: str) -> tuple[str, dict[str, RetrievalConfig]]:
    """The default name and the validated configurations of the file at ``path``, parsed once
    per process (``_parse.cache_clear()`` forgets them)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    configs = {}
    for name, body in raw["configs"].items():
        try:
            configs[name] = RetrievalConfig.model_validate({**body, "name": name})
        except ValidationError as exc:
            raise BadInput(f"retrieval configuration {name!r} is invalid: {exc}") from None
    return raw["default"], configs


def load_configs(path: Path | None = None) -> dict[str, RetrievalConfig]:
    """All named configurations (the packaged file, or ``path``)."""
    return dict(_parse(str(path or packaged_configs_path()))[1])


def default_config_name(path: Path | None = None) -> str:
    return _parse(str(path or packaged_configs_path()))[0]


def retrieval_config(name: str | None, path: Path | None = None) -> RetrievalConfig:
    """The named retrieval configuration (the file's default when ``None``); not the verifier's
    ``plugin.verify.config.verification_config``."""
    configs = load_configs(path)
    key = name or default_config_name(path)
    if key not in configs:
        raise BadInput(f"unknown retrieval configuration {key!r}; known: {', '.join(configs)}")
    return configs[key]
