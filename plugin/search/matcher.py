"""Claim matching: a post in any language → the fact-checks that address it.

``Matcher`` is the one place where the embedder, the store and fusion meet. For a request and a
named retrieval configuration it normalises the post, detects its language, builds the query
variants, embeds the dense ones in one batch, runs every sub-query (filters pushed into each)
in one ``_msearch`` round trip, fuses, boosts, fetches the ``_source`` of the fused head in one
more request, optionally reranks, and collapses near-duplicates.

Candidates come back as ids and a few doc values (``queries.CANDIDATE_FIELDS``), not documents:
reading stored fields for every candidate of every sub-query cost more than the searches.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field, replace
from datetime import date
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from plugin.embedding import Embedder
from plugin.errors import BadInput
from plugin.search.calibration import Calibrator, candidate_features, load_calibrator
from plugin.search.centering import LanguageCentroids, center_query, centroids_body, read_centroids
from plugin.search.fuse import minmax_fuse, rrf_fuse
from plugin.search.hybrid import NEURAL_PLUGIN, server_plan
from plugin.search.lang import detect_language
from plugin.models import LANG_CODE, MAX_K, MAX_TEXT_CHARS, MAX_WITHIN_DAYS, STORED_FIELDS, Fused, Hit, Mode
from plugin.search.normalize import normalize_post
from plugin.search.rerank import passage
from plugin.search.queries import (Filters, bm25_query, filter_query, knn_query, read_candidates,
                      sources_by_id, sources_query)
from plugin.search.retrieval import Fusion, RetrievalConfig, RetrieverKind, get_config
from plugin.settings import Settings
from plugin.index.store import Store
from plugin.index.templates import check_model
from plugin.search.generated import GENERATED
from plugin.search.variants import VARIANTS

_LANG = re.compile(LANG_CODE)
_WORD = re.compile(r"\w+", re.UNICODE)


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant. A reranker may also carry
    ``languages`` (a set of codes): the languages it was trained on, outside which ``Matcher``
    keeps the fused order (``outside_languages``)."""

    def score(self, query: str, passages: list[str]) -> list[float]: ...


def outside_languages(languages: Any, post_lang: str | None, head: list[Fused]) -> str | None:
    """Why a reranker trained on ``languages`` must not reorder this head (pure): the post, or a
    candidate in it, is in a language the reranker never saw, or the post's language is unknown.
    ``None`` (no restriction known) or a head within them: ``None``, rerank.

    A cross-encoder fine-tuned on English tweets alone reorders other languages worse than the
    first stage does: on the SemEval-2025 sample (es, ko, en) in auto mode the CLEF-2020 reranker
    took MAP@5 from 0.948 to 0.800, while leaving CLEF-2020's English dev+test better off."""
    if not languages:
        return None
    allowed = sorted(languages)
    if post_lang not in languages:
        return (f"the reranker was trained on {', '.join(allowed)} posts only, and this post is "
                f"{post_lang or 'in an unknown language'}: the matches are in fused (first-stage) order")
    others = sorted({lang for f in head if (lang := (f.source or {}).get("lang")) and lang not in languages})
    if others:
        return (f"the reranker was trained on {', '.join(allowed)} fact-checks only, and the "
                f"candidates include {', '.join(others)}: the matches are in fused (first-stage) order")
    return None


@dataclass(frozen=True)
class MatchRequest:
    text: str
    lang: str | None = None
    date: date | None = None
    mode: Mode = Mode.AUTO
    k: int = 10
    within_days: int | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    #: ``None``: rerank whenever the configuration has a rerank stage and the matcher a reranker;
    #: ``True``: the caller asked for it (the result notes when it could not); ``False``: never.
    rerank: bool | None = None
    #: the cross-encoder's time budget (a live request's): only as many of the fused head as
    #: fit are reranked, none when fewer than two fit (the result says so); ``None``: no budget
    rerank_budget_ms: float | None = None

    def validated(self) -> MatchRequest:
        if not isinstance(self.text, str) or not self.text.strip():
            raise BadInput("text is empty: give the post or claim to match")
        if len(self.text) > MAX_TEXT_CHARS:
            raise BadInput(f"text is longer than {MAX_TEXT_CHARS} characters")
        if not 1 <= self.k <= MAX_K:
            raise BadInput(f"k must be between 1 and {MAX_K}, got {self.k}")
        if self.lang is not None and not _LANG.match(self.lang):
            raise BadInput(f"lang must be an ISO 639-1 code such as 'en', got {self.lang!r}")
        if self.within_days is not None and not 0 <= self.within_days <= MAX_WITHIN_DAYS:
            raise BadInput(f"within_days must be between 0 and {MAX_WITHIN_DAYS}")
        if self.within_days is not None and self.date is None:
            raise BadInput("within_days needs a date: the window ends at the post date")
        if self.rerank_budget_ms is not None and not 0 < self.rerank_budget_ms <= 60_000:
            raise BadInput("rerank_budget_ms must be between 0 and 60000")
        return self


@dataclass(frozen=True)
class MatchResult:
    lang: str | None
    matches: list[dict[str, Any]]
    took_ms: float
    config: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False
    notes: tuple[str, ...] = ()
    #: where the sub-queries were fused: ``client`` (one ``_msearch`` + ``plugin.search.fuse``)
    #: or ``server`` (one hybrid query through a neural-search pipeline)
    fusion: str = "client"
    #: each match's ``calibration.FEATURES`` row (client-side fusion only), for the lab
    features: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"lang": self.lang, "config": self.config, "took_ms": round(self.took_ms, 2),
                "reranked": self.reranked, "notes": list(self.notes), "matches": self.matches}


def same_claim(a: str, b: str, threshold: float) -> bool:
    """Near-duplicate test for syndicated debunks: word-set Jaccard similarity ≥ threshold."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= threshold


def collapse(fused: list[Fused], threshold: float, k: int) -> list[Fused]:
    """Keep the best-ranked fact-check of each near-duplicate group until ``k`` remain."""
    kept: list[Fused] = []
    for f in fused:
        claim = (f.source or {}).get("claim") or ""
        if any(same_claim(claim, (g.source or {}).get("claim") or "", threshold) for g in kept):
            continue
        kept.append(f)
        if len(kept) >= k:
            break
    return kept


def boost(fused: list[Fused], boosts: dict[str, float], lang: str | None,
          same_lang: float) -> list[Fused]:
    """Multiply fused scores by trusted-source boosts (domain or publisher) and, in auto mode,
    by ``same_lang`` for fact-checks in the post's language; returns a new, re-ranked list."""
    if not boosts and same_lang == 1.0:
        return list(fused)
    scored = []
    for f in fused:
        src = f.source or {}
        factor = 1.0
        if boosts:
            factor = max(boosts.get(src.get("domain") or "", 1.0), boosts.get(src.get("publisher") or "", 1.0))
        if lang and src.get("lang") == lang:
            factor *= same_lang
        scored.append((f.score * factor, f))
    scored.sort(key=lambda p: (-p[0], p[1].rank, p[1].id))
    # built directly: dataclasses.replace costs ~10 µs a call, and this runs on every candidate
    return [Fused(id=f.id, score=score, rank=i, contributions=f.contributions)
            for i, (score, f) in enumerate(scored, start=1)]


class Matcher:
    """Hybrid claim matcher over the fact-check alias, driven by a named configuration."""

    #: In auto mode, fact-checks in the post's own language get this multiplicative boost: about
    #: half a rank at the top of an RRF list (1/61 vs 1/62), enough to break near-ties in favour
    #: of the reader's language, never enough to bury a better match in another language.
    SAME_LANG_BOOST = 1.01

    def __init__(self, store: Store, embedder: Embedder, settings: Settings, *,
                 alias: str | None = None, config: RetrievalConfig | str | None = None,
                 reranker: Reranker | None = None,
                 generate: Callable[[str, str, str | None], str] | None = None,
                 explained: bool = False,
                 query_encoders: dict[str, Embedder] | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.alias = alias or settings.index
        self.config = config if isinstance(config, RetrievalConfig) else get_config(
            config or settings.retrieval_config)
        self.reranker = reranker
        #: writes the LLM query variants (``plugin.search.generated``), when a configuration has them
        self.generate = generate
        #: every match carries each sub-query's rank and score (``explain``), so this matcher
        #: always fuses client-side: a hybrid query reports only the fused score
        self.explained = explained
        self._model_checked = False
        self._plugins: set[str] | None = None
        self._pipelines: set[str] | None = None
        self._pipelines_read_at = 0.0
        self._centroids: LanguageCentroids | None = None
        self._centroids_at = 0.0
        self._calibrators: dict[str, Calibrator | None] = {}
        #: tuned query towers by adapter name (``None``: not available here, with the reason)
        self._query_encoders: dict[str, Embedder | None] = dict(query_encoders or {})
        self._query_encoder_errors: dict[str, str] = {}
        #: the cross-encoder's measured cost of one pair (moving average), and the clock it is
        #: measured with
        self._pair_ms: float | None = None
        #: live matches in a row whose budget fitted too few pairs (``REPROBE_AFTER``)
        self._budget_skips = 0
        self.clock = time.perf_counter

    def _check_model(self) -> None:
        if not self._model_checked:
            check_model(self.store, self.alias, self.embedder.name, self.embedder.dim)
            self._model_checked = True

    def plan(self, req: MatchRequest, text: str, lang: str | None, config: RetrievalConfig, *,
             centroids: LanguageCentroids | None = None
             ) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
        """The sub-query bodies (by retriever name) and fusion weights for a request: pure
        except for embedding the dense variants (one batch). ``centroids``: the corpus's
        language centroids, for a configuration that centres its query vectors across
        languages (``plugin.search.centering``)."""
        mode = Mode.parse(config.mode) if config.mode else req.mode
        mono = mode is Mode.MONO and lang is not None
        flt = filter_query(Filters(langs=(lang,) if mono else None, published_before=req.date,
                                   within_days=req.within_days, allow=tuple(req.allow),
                                   deny=tuple(req.deny)))
        size = max(config.candidates, req.k)
        variants = {r.query for r in config.retrievers}
        known = set(VARIANTS) | (set(GENERATED) if self.generate else set())
        unknown = variants - known
        if unknown:
            raise BadInput(f"configuration {config.name!r} uses query variants {sorted(unknown)} "
                           f"that need an LLM this deployment lacks (set FACTSIEVE_LLM_URL); "
                           f"known: {sorted(known)}")
        texts = {v: VARIANTS[v](text, lang) if v in VARIANTS else self.generate(v, text, lang)
                 for v in sorted(variants)}
        retrievers = [r for r in config.retrievers if texts[r.query]]  # a failed LLM variant sits out
        dense_variants = sorted({r.query for r in retrievers if r.kind is RetrieverKind.DENSE})
        vectors = {}
        if dense_variants:
            encoder = self.query_encoder_for(config) or self.embedder
            encoded = encoder.encode_queries([texts[v] for v in dense_variants])
            vectors = dict(zip(dense_variants, encoded))
            if centroids is not None and config.language_centering and not mono:
                vectors = {v: center_query(vec, lang, centroids, config.language_centering)
                           for v, vec in vectors.items()}
        bodies = {}
        for r in retrievers:
            if r.kind is RetrieverKind.BM25:
                bodies[r.name] = bm25_query(texts[r.query], lang=lang, filters=flt, size=size)
            else:
                bodies[r.name] = knn_query(vectors[r.query], filters=flt, size=size)
        # auto searches every language like cross, so it takes the crosslingual weights: BM25
        # only ever finds same-language fact-checks, and weighting it as in mono mode buries a
        # relevant fact-check in another language under same-language near-misses
        weights = config.weights(crosslingual=not mono)
        return bodies, {name: w for name, w in weights.items() if name in bodies}

    def match(self, req: MatchRequest, config: RetrievalConfig | str | None = None) -> MatchResult:
        req = req.validated()
        cfg = self.config if config is None else (
            config if isinstance(config, RetrievalConfig) else get_config(config))
        t0 = time.perf_counter()
        self._check_model()
        text = normalize_post(req.text) or req.text.strip()
        lang = req.lang or detect_language(text)
        mode = Mode.parse(cfg.mode) if cfg.mode else req.mode
        crosslingual = lang is not None and mode is not Mode.MONO
        centroids = self.language_centroids() if crosslingual and cfg.language_centering else None
        t1 = time.perf_counter()
        bodies, weights = self.plan(req, text, lang, cfg, centroids=centroids)
        t2 = time.perf_counter()
        # across languages, BM25 is nearly blind to fact-checks in other languages than the post's:
        # retrievers with a stand-in take its term for those (``fuse.stand_in_terms``)
        stand_ins = cfg.stand_ins() if crosslingual else {}
        server = None if stand_ins else self._server_plan(cfg, bodies, weights, max(cfg.candidates, req.k))
        if server is not None:
            fused = self._server_fuse(server)
            t3 = time.perf_counter()
        else:
            responses = self.store.msearch(self.alias, list(bodies.values()))
            t3 = time.perf_counter()
            rankings = {name: read_candidates(resp, name) for name, resp in zip(bodies, responses)}
            blind = other_language(lang)
            if cfg.fusion is Fusion.RRF:
                fused = rrf_fuse(rankings, weights, k=cfg.rrf_k, stand_ins=stand_ins, blind=blind)
            else:
                fused = minmax_fuse(rankings, weights, stand_ins=stand_ins, blind=blind)
        fused = boost(fused, cfg.boosts, lang, self.SAME_LANG_BOOST if mode is Mode.AUTO else 1.0)
        t4 = time.perf_counter()
        reranking = self.will_rerank(req, cfg)
        head = max(req.k, cfg.rerank.top if reranking and cfg.rerank else 0)
        sourced = min(len(fused), fused_head(head, req.k, cfg.collapse))
        fused = self._fetch_sources(fused, 0, sourced)
        t5 = time.perf_counter()
        rerank_scores: dict[str, float] = {}
        notes: list[str] = []
        encoder_note = self.query_encoder_note(cfg)
        if encoder_note and any(r.kind is RetrieverKind.DENSE for r in cfg.retrievers):
            notes.append(encoder_note)
        if reranking:
            assert cfg.rerank is not None
            outside = outside_languages(getattr(self.reranker, "languages", None), lang,
                                        fused[:cfg.rerank.top])
            pairs = pairs_within(req.rerank_budget_ms, self._pair_ms, cfg.rerank.top)
            if outside is not None:
                reranking = False
                notes.append(outside)
            elif req.rerank_budget_ms is not None and pairs < MIN_RERANK_PAIRS:
                reranking = False
                notes.append(f"the rerank budget of {req.rerank_budget_ms:g} ms fits fewer than "
                             f"{MIN_RERANK_PAIRS} pairs (~{self._pair_ms:.0f} ms a pair measured): "
                             "the matches are in fused (first-stage) order")
                # a cost measured during a stall would otherwise turn reranking off for good:
                # nothing is reranked, so nothing is measured again; forget it now and then
                self._budget_skips += 1
                if self._budget_skips >= REPROBE_AFTER:
                    self._pair_ms, self._budget_skips = None, 0
            else:
                self._budget_skips = 0
                fused, rerank_scores = self._rerank(text, fused, cfg, pairs)
                if pairs < min(cfg.rerank.top, len(fused)):
                    notes.append(f"reranked the top {pairs} of {cfg.rerank.top} within the "
                                 f"{req.rerank_budget_ms:g} ms budget")
        t6 = time.perf_counter()
        if cfg.collapse:
            top = collapse(fused[:sourced], cfg.collapse, req.k)
            while len(top) < req.k and sourced < len(fused):  # duplicates ate the fetched head
                end = min(len(fused), sourced + max(req.k, 10))
                fused = self._fetch_sources(fused, sourced, end)
                sourced = end
                top = collapse(fused[:sourced], cfg.collapse, req.k)
        else:
            top = fused[: req.k]
        t7 = time.perf_counter()
        # calibrated confidence needs each retriever's rank and score: a hybrid query has none
        features = candidate_features(fused, top, lang) if server is None else None
        calibrator = self.calibrator_for(cfg) if features is not None else None
        confidence = calibrator.predict(features, lang) if calibrator and len(top) else None
        matches = [_match_dict(f, rerank_scores.get(f.id),
                               None if confidence is None else float(confidence[i]))
                   for i, f in enumerate(top)]
        t8 = time.perf_counter()
        timings = {"normalize_ms": (t1 - t0) * 1e3, "embed_ms": (t2 - t1) * 1e3,
                   "search_ms": (t3 - t2) * 1e3, "fetch_ms": (t5 - t4 + t7 - t6) * 1e3,
                   "fuse_ms": (t4 - t3 + t8 - t7) * 1e3, "rerank_ms": (t6 - t5) * 1e3}
        if req.rerank is True and not self.will_rerank(req, cfg):
            notes.append(f"no reranker is configured for configuration {cfg.name!r}: "
                         "the matches are in fused (first-stage) order")
        return MatchResult(lang=lang, matches=matches, took_ms=(t8 - t0) * 1e3, config=cfg.name,
                           timings_ms=timings, reranked=reranking, notes=tuple(notes),
                           fusion="client" if server is None else "server", features=features)

    def query_encoder_for(self, cfg: RetrievalConfig) -> Embedder | None:
        """The tuned query tower a configuration names, loaded once; ``None`` when it names none
        or it cannot load here (``query_encoder_note`` says why, and the base encoder serves)."""
        name = cfg.query_encoder
        if not name:
            return None
        if name not in self._query_encoders:
            from plugin.embedding.query_tower import load_query_tower
            from plugin.errors import ModelUnavailable

            try:
                self._query_encoders[name] = load_query_tower(self.settings, name, self.embedder)
            except ModelUnavailable as exc:
                self._query_encoders[name] = None
                self._query_encoder_errors[name] = str(exc)
        return self._query_encoders[name]

    def query_encoder_note(self, cfg: RetrievalConfig) -> str | None:
        """Why a configuration's query encoder is not in use, or ``None`` when it is (or there
        is none)."""
        if cfg.query_encoder and self.query_encoder_for(cfg) is None:
            reason = self._query_encoder_errors.get(cfg.query_encoder, "not available")
            return f"the base encoder embedded the post: {reason}"
        return None

    def calibrator_for(self, cfg: RetrievalConfig) -> Calibrator | None:
        """The configuration's packaged confidence model (``factsieve calibrate``; the one
        ``cfg.calibrator`` names, else its own), read once."""
        name = cfg.calibrator or cfg.name
        if name not in self._calibrators:
            self._calibrators[name] = load_calibrator(name)
        return self._calibrators[name]

    #: how long a matcher keeps the corpus's language centroids before reading them again
    CENTROIDS_TTL_S = 600.0

    def language_centroids(self) -> LanguageCentroids:
        """The alias's per-language mean embeddings (one aggregation over a sample), read at most
        every ``CENTROIDS_TTL_S``: they move slowly as the corpus grows. Several threads may
        read them at once after expiry; each stores the same thing."""
        now = time.monotonic()
        if self._centroids is None or now - self._centroids_at > self.CENTROIDS_TTL_S:
            self._centroids = read_centroids(self.store.search(self.alias, centroids_body()))
            self._centroids_at = now
        return self._centroids

    def will_rerank(self, req: MatchRequest, cfg: RetrievalConfig) -> bool:
        """The one place that decides whether a match is reranked: the request does not refuse it,
        the configuration has a rerank stage, and this matcher was given a reranker for it
        (``Services.matcher`` loads one only when the caller asks)."""
        return req.rerank is not False and cfg.rerank is not None and self.reranker is not None

    def _fetch_sources(self, fused: list[Fused], start: int, end: int) -> list[Fused]:
        """``fused`` with the ``_source`` of ``fused[start:end]`` attached (one search). A
        fact-check deleted since the candidate search keeps its doc values only."""
        ids = [f.id for f in fused[start:end]]
        if not ids:
            return fused
        found = sources_by_id(self.store.search(self.alias, sources_query(ids)))
        return fused[:start] + [with_source(f, found.get(f.id)) for f in fused[start:end]] + fused[end:]

    def _server_plan(self, cfg: RetrievalConfig, bodies: dict[str, Any], weights: dict[str, float],
                     size: int) -> Any:
        if self.explained or not self.settings.server_fusion:
            return None
        if self._plugins is None:
            self._plugins = self.store.plugins()
        plan, why = server_plan(cfg, bodies, weights, size=size, plugins=self._plugins,
                                pipelines=self._installed_pipelines())
        stale = time.monotonic() - self._pipelines_read_at > self.PIPELINES_TTL_S
        if plan is None and why.startswith("search pipeline") and stale:
            # installed since we last looked (`factsieve init` after this process started)?
            # look again at most every PIPELINES_TTL_S; meanwhile fuse client-side
            self._pipelines = None
        return plan

    #: how long a matcher trusts its list of installed search pipelines when one is missing
    PIPELINES_TTL_S = 30.0

    def _installed_pipelines(self) -> set[str] | None:
        if self._plugins is not None and NEURAL_PLUGIN not in self._plugins:
            return set()
        if self._pipelines is None:
            self._pipelines = self.store.search_pipelines()
            self._pipelines_read_at = time.monotonic()
        return self._pipelines

    def _server_fuse(self, plan: Any) -> list[Fused]:
        """One hybrid query through its search pipeline (installed by ``factsieve init``)."""
        response = self.store.search(self.alias, plan.body, search_pipeline=plan.pipeline)
        hits = read_candidates(response, "hybrid")
        return [Fused(id=h.id, score=h.score, rank=h.rank, contributions={"hybrid": h}) for h in hits]

    def _rerank(self, text: str, fused: list[Fused], cfg: RetrievalConfig, pairs: int
                ) -> tuple[list[Fused], dict[str, float]]:
        """The fused head's first ``pairs`` reordered by the cross-encoder (blended with the
        fused rank when the configuration says so); the rest keep their fused order. Each call
        updates the measured cost of a pair that ``pairs_within`` plans the next one with."""
        assert cfg.rerank is not None and self.reranker is not None
        top = min(cfg.rerank.top, pairs)
        head, tail = fused[:top], fused[top:]
        passages = [passage(f.source) for f in head]
        t0 = self.clock()
        scores = self.reranker.score(text, passages)
        if head:
            per_pair = (self.clock() - t0) * 1e3 / len(head)
            self._pair_ms = per_pair if self._pair_ms is None else 0.7 * self._pair_ms + 0.3 * per_pair
        by_id = dict(zip((f.id for f in head), scores))
        w, n = cfg.rerank.weight, len(head)
        if cfg.rerank.rank_prior > 0:
            final = dict(zip((f.id for f in head), rank_prior_scores(
                scores, [f.rank for f in head], cfg.rerank.rank_prior)))
        else:  # blend rerank order with fused order when w < 1
            final = {f.id: w * by_id[f.id] + (1 - w) * (n - f.rank) / max(n, 1) for f in head}
        ordered = sorted(head, key=lambda f: (-final[f.id], f.rank))
        reranked = [replace(f, rank=i) for i, f in enumerate(ordered, start=1)]
        reranked += [replace(f, rank=len(reranked) + i) for i, f in enumerate(tail, start=1)]
        return reranked, by_id


#: reranking fewer pairs than this cannot change an order worth reporting
MIN_RERANK_PAIRS = 2
#: pairs a reranker is tried on before its cost is known
PROBE_PAIRS = 2
#: live matches in a row without a pair in the budget after which the measured cost is forgotten
#: and the next match probes again
REPROBE_AFTER = 20


#: probabilities are clipped this far from 0 and 1 before their log-odds are taken
LOG_ODDS_EPS = 1e-15


def rank_prior_scores(probabilities: Sequence[float], ranks: Sequence[int], prior: float) -> list[float]:
    """A reranked head's final scores: the cross-encoder's log-odds ``ln(p / (1 − p))`` minus
    ``prior · ln(rank)``, ``rank`` the candidate's 1-based fused (first-stage) rank (pure).

    Why: both stages are right most of the time and wrong in different places (on CLEF-2020 the
    reranker fixed dev posts the first stage missed and demoted test posts it had right). Adding
    ``ln P(relevant | rank) ∝ −prior · ln(rank)`` to the reranker's log-odds is the posterior
    under a Zipf-shaped prior over the first stage's ranks: a confident reranker still reorders
    the head, while a near tie goes to the first stage's order. Blending probabilities with the
    rank (``weight`` < 1) cannot do this: a listwise-trained reranker's probabilities sit near 0
    or 1, so any weight either drowns the rank or is drowned by it. ``prior`` 0 is the reranker's
    own order."""
    if len(probabilities) != len(ranks):
        raise ValueError(f"{len(probabilities)} probabilities for {len(ranks)} ranks")
    return with_rank_prior([log_odds(p) for p in probabilities], ranks, prior)


def log_odds(p: float) -> float:
    """``ln(p / (1 − p))``, ``p`` clipped ``LOG_ODDS_EPS`` away from 0 and 1 (pure)."""
    q = min(max(float(p), LOG_ODDS_EPS), 1.0 - LOG_ODDS_EPS)
    return math.log(q / (1.0 - q))


def with_rank_prior(logits: Sequence[float], ranks: Sequence[int], prior: float) -> list[float]:
    """``logit − prior · ln(rank)`` per candidate (pure; ranks are 1-based)."""
    if len(logits) != len(ranks):
        raise ValueError(f"{len(logits)} logits for {len(ranks)} ranks")
    if any(r < 1 for r in ranks):
        raise ValueError(f"fused ranks are 1-based, got {list(ranks)}")
    return [float(x) - prior * math.log(r) for x, r in zip(logits, ranks)]


def pairs_within(budget_ms: float | None, pair_ms: float | None, top: int) -> int:
    """How many of the fused head to rerank: all ``top`` without a budget; ``PROBE_PAIRS`` while
    the cost of a pair is not measured yet; else as many as fit the budget (pure)."""
    if budget_ms is None:
        return top
    if pair_ms is None:
        return min(top, PROBE_PAIRS)
    return min(top, int(budget_ms // max(pair_ms, 1e-6)))


def other_language(lang: str | None) -> Callable[[Hit], bool]:
    """Whether a candidate is a fact-check in another language than ``lang`` (from its doc
    values; one without a language counts as the post's)."""
    def blind(hit: Hit) -> bool:
        other = (hit.source or {}).get("lang")
        return bool(other) and other != lang
    return blind


def fused_head(head: int, k: int, collapse_threshold: float | None) -> int:
    """How many fused candidates get their ``_source`` in the first fetch: the ``head`` that is
    shown or reranked, plus a margin when near-duplicates will be collapsed out of it."""
    return head + (k // 2 + 5 if collapse_threshold else 0)


def with_source(f: Fused, source: dict[str, Any] | None) -> Fused:
    """``f`` with ``source`` on each contributing hit (explanations keep their ranks/scores)."""
    if source is None:
        return f
    return replace(f, contributions={q: replace(h, source=source) for q, h in f.contributions.items()})


def _match_dict(f: Fused, rerank_score: float | None = None,
                confidence: float | None = None) -> dict[str, Any]:
    src = f.source or {}
    explain: dict[str, Any] = {q: {"rank": h.rank, "score": round(h.score, 6)}
                               for q, h in sorted(f.contributions.items())}
    if rerank_score is not None:
        explain["rerank"] = {"score": round(float(rerank_score), 6)}
    return {"id": f.id, "score": round(f.score, 6), "rank": f.rank,
            "confidence": None if confidence is None else round(confidence, 4),
            **{name: src.get(name) for name in STORED_FIELDS if name != "id"}, "explain": explain}
