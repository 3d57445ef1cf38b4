"""Claim matching: a post in any language → the fact-checks that address it.

``Matcher`` composes the embedder, the store and fusion. For a request and a named retrieval
configuration it normalises the post, detects its language, decides the ``MatchPlan``, writes
and embeds the query variants (one batch), runs every sub-query (filters pushed into each) in
one ``_msearch`` round trip or one hybrid query, fuses, boosts, fetches the ``_source`` of the
fused head in one more request, reranks as far as ``RerankGate`` allows, and collapses
near-duplicates.

Candidates come back as ids and a few doc values (``queries.CANDIDATE_FIELDS``), not documents:
reading stored fields for every candidate of every sub-query cost more than the searches.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from plugin.embedding import Embedder
from plugin.errors import BadInput, FactSieveError
from plugin.index.store import Store
from plugin.index.templates import check_model
from plugin.models import Fused
from plugin.search.calibration import Calibrator, candidate_features, load_calibrator
from plugin.search.centering import LanguageCentroids, center_query, centroids_body, read_centroids
from plugin.search.duplicates import collapse, same_claim  # noqa: F401 (same_claim: re-exported)
from plugin.search.fuse import minmax_fuse, rrf_fuse
from plugin.search.generated import GENERATED
from plugin.search.hybrid import NEURAL_PLUGIN, ServerPlan, server_plan
from plugin.search.image_query import image_hits, image_note, post_texts, same_image_body
from plugin.search.images import feature_view, merge_image_hits, ocr_queries, pin_image_hits, signals
from plugin.lang import detect_language
from plugin.search.normalize import normalize_post
from plugin.search.plan import (MatchPlan, admission_offsets, admit_better_answers, boost, dense_variants,
                                fused_head, other_language)
from plugin.search.queries import read_candidates, sources_by_id, sources_query
from plugin.search.request import MatchRequest  # noqa: F401 (re-exported, as are the rerank names)
from plugin.search.rerank import (Reranker, passage, promote_sure, rank_prior_scores,  # noqa: F401
                                  reorder, unavailable_reranker, with_rank_prior)
from plugin.search.rerank_gate import (FUSED_ORDER, REPROBE_AFTER, RerankDecision, RerankGate,  # noqa: F401
                                       measure_pair_ms, outside_languages, pairs_within)
from plugin.search.result import MatchResult, Stopwatch, match_dict, with_source
from plugin.search.retrieval import Fusion, RetrievalConfig, RetrieverKind, retrieval_config
from plugin.search.variants import VARIANTS
from plugin.settings import Settings

if TYPE_CHECKING:
    from plugin.image.model import ImageAnalysis

log = logging.getLogger(__name__)

class Matcher:
    """Hybrid claim matcher over the fact-check alias, driven by a named configuration."""

    #: how long a matcher keeps the corpus's language centroids before reading them again
    CENTROIDS_TTL_S = 600.0
    #: how long a matcher trusts its list of installed search pipelines when one is missing
    PIPELINES_TTL_S = 30.0

    def __init__(self, store: Store, embedder: Embedder, settings: Settings, *,
                 alias: str | None = None, config: RetrievalConfig | str | None = None,
                 reranker: Reranker | None = None,
                 generate: Callable[[str, str, str | None], str] | None = None,
                 explained: bool = False,
                 query_encoders: dict[str, Embedder] | None = None,
                 server_fusion: bool | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.alias = alias or settings.index
        self.config = config if isinstance(config, RetrievalConfig) else retrieval_config(
            config or settings.retrieval_config)
        self.reranker = reranker
        #: writes the LLM query variants (``plugin.search.generated``), when a configuration has them
        self.generate = generate
        #: every match carries each sub-query's rank and score (``explain``), so this matcher
        #: always fuses client-side: a hybrid query reports only the fused score
        self.explained = explained
        #: try a hybrid query first (``None``: as ``settings.server_fusion`` says)
        self.server_fusion = settings.server_fusion if server_fusion is None else server_fusion
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
        #: the reranker's measured cost of a pair and the re-probe count (``RerankGate``), and
        #: the clock the cost is measured with
        self.gate = RerankGate()
        self.clock = time.perf_counter
        self._warmed = False

    def _config(self, config: RetrievalConfig | str | None) -> RetrievalConfig:
        if config is None:
            return self.config
        return config if isinstance(config, RetrievalConfig) else retrieval_config(config)

    def _check_model(self) -> None:
        if not self._model_checked:
            check_model(self.store, self.alias, self.embedder.name, self.embedder.dim)
            self._model_checked = True

    def match(self, req: MatchRequest, config: RetrievalConfig | str | None = None) -> MatchResult:
        """The fact-checks that address ``req``'s post; a post with an image (``req.image``) is
        matched by its caption, the text read from the image and its hashes
        (``plugin.search.images``), fused client-side."""
        req, cfg = req.validated(), self._config(config)
        watch = Stopwatch()
        with watch("normalize_ms"):
            texts, decided, centroids = self._prepare(req, cfg)
        with watch("embed_ms"):
            bodies, weights, decided = self._plan_texts(req, texts, decided, cfg, centroids)
        fused, server = self._retrieve(decided, cfg, bodies, weights, watch, image=req.image, centroids=centroids)
        reranker = self.reranker if self.reranker is not None else unavailable_reranker(cfg)
        if (not self._warmed and self.reranker is not None and cfg.rerank is not None
                and req.rerank is not False and req.rerank_budget_ms is not None):
            # the first budgeted match of this matcher: what a pair costs, measured before it
            # decides, so that the first request gets the head the budget fits, as later ones do
            # (a cost forgotten after a stall is probed again by a real match: ``RerankGate``)
            self.gate, self._warmed = self.gate.measured(measure_pair_ms(self.reranker, cfg.rerank.top,
                                                                         self.clock)), True
        decision = self.gate.decide(cfg, reranker, asked=req.rerank, lang=decided.lang, fused=fused,
                                    budget_ms=req.rerank_budget_ms,
                                    sure=self._first_confidence(cfg, fused, decided.lang, bool(texts.get("")), server))
        self.gate = decision.gate
        with watch("fetch_ms"):
            head = max(req.k, cfg.rerank.top if decision.pairs and cfg.rerank else 0)
            sourced = min(len(fused), fused_head(head, req.k, cfg.collapse))
            fused = self._fetch_sources(fused, 0, sourced)
        with watch("rerank_ms"):
            fused, rerank_scores, failed = self._rerank("\n".join(texts.values()), fused, cfg, decision,
                                                        decided.lang)
            fused = pin_image_hits(fused)
        with watch("fetch_ms"):
            top, fused = self._top(fused, sourced, cfg, req.k)
        with watch("fuse_ms"):
            matches, features = self._matches(cfg, fused, top, decided.lang, rerank_scores, server,
                                              caption=bool(texts.get("")))
        dense = any(r.kind is RetrieverKind.DENSE for r in cfg.retrievers)
        notes = tuple(n for n in (dense and self.query_encoder_note(cfg), decision.note, failed,
                                  image_note(req.image, texts)) if n)
        return MatchResult(lang=decided.lang, matches=matches, took_ms=watch.total_ms(), config=cfg.name,
                           timings_ms=watch.ms, reranked=decision.pairs > 0 and not failed, notes=notes,
                           fusion="client" if server is None else "server", features=features,
                           image=None if req.image is None else req.image.to_dict())

    def _prepare(self, req: MatchRequest, cfg: RetrievalConfig
                 ) -> tuple[dict[str, str], MatchPlan, LanguageCentroids | None]:
        """The normalised texts by query-set prefix (``""``: the post's own text, ``ocr:``: the
        text read from its image; ``images.post_texts``), the plan for them (the language
        detected on all of them), and the language centroids the plan needs."""
        self._check_model()
        texts = post_texts(req.text, req.image, normalize_post)
        decided = MatchPlan.decide(req, req.lang or detect_language("\n".join(texts.values())), cfg)
        return texts, decided, self.language_centroids() if decided.needs_centroids else None

    def _plan_texts(self, req: MatchRequest, texts: dict[str, str], decided: MatchPlan,
                    cfg: RetrievalConfig, centroids: LanguageCentroids | None
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, float], MatchPlan]:
        """Every query set's sub-queries and weights (``plan`` for each text; the OCR set's
        renamed by ``images.ocr_queries``), and the plan with the sets' stand-ins."""
        bodies, weights, stand_ins = {}, {}, {}
        for prefix, text in texts.items():
            b, w = self.plan(req, text, decided.lang, cfg, centroids=centroids, decided=decided)
            s = {n: p for n, p in decided.stand_ins.items() if n in b}
            if prefix:
                b, w, s = ocr_queries(b, w, s, cfg.ocr_weight)
            bodies.update(b)
            weights.update(w)
            stand_ins.update(s)
        if set(texts) != {""}:
            decided = replace(decided, stand_ins=stand_ins)
        return bodies, weights, decided

    def plan(self, req: MatchRequest, text: str, lang: str | None, config: RetrievalConfig, *,
             centroids: LanguageCentroids | None = None, decided: MatchPlan | None = None
             ) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
        """The sub-query bodies (by retriever name) and fusion weights for a request: the LLM
        writes its variants, the (tuned) query encoder embeds the dense ones in one batch,
        centred across languages with ``centroids`` when the plan says so, and the pure
        ``MatchPlan.queries`` builds the bodies. ``decided``: the plan (decided here when
        ``None``). A subclass may rewrite the bodies here (the lab's ``ExcludingMatcher``)."""
        decided = decided or MatchPlan.decide(req, lang, config)
        texts = self.variant_texts(config, text, lang)
        dense = dense_variants(config, texts)
        vectors, raw = {}, None
        if dense:
            encoder = self.query_encoder_for(config) or self.embedder
            vectors = dict(zip(dense, encoder.encode_queries([texts[v] for v in dense])))
            if centroids is not None and decided.centering:
                raw = vectors  # the own-language pass searches one language: nothing to centre
                vectors = {v: center_query(vec, lang, centroids, decided.centering) for v, vec in vectors.items()}
        return decided.queries(config, texts, vectors, raw)

    def variant_texts(self, config: RetrievalConfig, text: str, lang: str | None) -> dict[str, str | None]:
        """Each query variant ``config`` uses, written (the LLM ones by ``generate``; ``None``
        when that failed). Variants that need an LLM this matcher lacks are a ``BadInput``."""
        variants = {r.query for r in config.retrievers}
        known = set(VARIANTS) | (set(GENERATED) if self.generate else set())
        unknown = variants - known
        if unknown:
            raise BadInput(f"configuration {config.name!r} uses query variants {sorted(unknown)} "
                           f"that need an LLM this deployment lacks (set FACTSIEVE_LLM_URL); "
                           f"known: {sorted(known)}")
        return {v: VARIANTS[v](text, lang) if v in VARIANTS else self.generate(v, text, lang)  # type: ignore[misc]
                for v in sorted(variants)}

    def _retrieve(self, decided: MatchPlan, cfg: RetrievalConfig, bodies: dict[str, Any],
                  weights: dict[str, float], watch: Stopwatch, image: ImageAnalysis | None = None,
                  centroids: LanguageCentroids | None = None) -> tuple[list[Fused], ServerPlan | None]:
        """The boosted fusion of the sub-queries: one hybrid query fused by OpenSearch when the
        plan fits one (no stand-ins: their terms are computed here; no image), else one
        ``_msearch``, with the image's same-image search in it and its hits first."""
        same = same_image_body(image, decided, self.settings)
        with watch("search_ms"):
            # stand-ins and the own-language pass's admissions are computed here, not by the server
            server = None if decided.stand_ins or decided.own_language or image is not None else self._server_plan(
                cfg, bodies, weights, decided.size)
            if server is not None:
                fused = self._server_fuse(server)
            else:
                searches = list(bodies.values()) + ([same] if same else [])
                responses = self.store.msearch(self.alias, searches) if searches else []
        with watch("fuse_ms"):
            if server is None:
                rankings = {name: read_candidates(resp, name) for name, resp in zip(bodies, responses)}
                if decided.own_language > 0:
                    rankings = admit_better_answers(rankings, decided.lang, decided.stand_ins, admission_offsets(
                        bodies, centroids, decided.admission_centering))
                fuse = rrf_fuse if cfg.fusion is Fusion.RRF else minmax_fuse
                extra = {"k": cfg.rrf_k} if cfg.fusion is Fusion.RRF else {}
                fused = fuse(rankings, weights, stand_ins=decided.stand_ins,
                             blind=other_language(decided.lang), **extra)
            fused = boost(fused, cfg.boosts, decided.lang, decided.same_lang)
            if same:
                fused = merge_image_hits(fused, image_hits(image, responses[-1]))  # type: ignore[arg-type]
            return fused, server

    def _top(self, fused: list[Fused], sourced: int, cfg: RetrievalConfig, k: int
             ) -> tuple[list[Fused], list[Fused]]:
        """The first ``k`` of ``fused``, near-duplicates collapsed (fetching more sources when
        duplicates ate the fetched head), and ``fused`` with what was fetched."""
        if not cfg.collapse:
            return fused[:k], fused
        top = collapse(fused[:sourced], cfg.collapse, k)
        while len(top) < k and sourced < len(fused):
            end = min(len(fused), sourced + max(k, 10))
            fused = self._fetch_sources(fused, sourced, end)
            sourced = end
            top = collapse(fused[:sourced], cfg.collapse, k)
        return top, fused

    def _matches(self, cfg: RetrievalConfig, fused: list[Fused], top: list[Fused], lang: str | None,
                 rerank_scores: dict[str, float], server: ServerPlan | None, *, caption: bool = True
                 ) -> tuple[list[dict[str, Any]], Any]:
        """The matches as dicts with their calibrated confidence and signals, and the
        calibration features (which need each retriever's rank and score: a hybrid query has
        none; for a post with an image, the caption's retrievers', else the OCR text's)."""
        features = None if server is not None else candidate_features(
            feature_view(fused, caption=caption), feature_view(top, caption=caption), lang)
        calibrator = self.calibrator_for(cfg) if features is not None else None
        confidence = calibrator.predict(features, lang) if calibrator and len(top) else None
        return [{**match_dict(f, rerank_scores.get(f.id), None if confidence is None else float(confidence[i])),
                 "signals": signals(f)} for i, f in enumerate(top)], features

    def _first_confidence(self, cfg: RetrievalConfig, fused: list[Fused], lang: str | None, caption: bool,
                          server: ServerPlan | None) -> float | None:
        """The first stage's confidence in its first candidate, before any reranking, where the
        rerank stage would skip a sure head (``Rerank.skip_at``); else ``None``."""
        if cfg.rerank is None or cfg.rerank.skip_at is None or server is not None or not fused:
            return None
        calibrator = self.calibrator_for(cfg)
        if calibrator is None:
            return None
        x = candidate_features(feature_view(fused, caption=caption), feature_view(fused[:1], caption=caption), lang)
        return float(calibrator.predict(x, lang)[0])

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

    def language_centroids(self) -> LanguageCentroids:
        """The alias's per-language mean embeddings (one aggregation over a sample), read at most
        every ``CENTROIDS_TTL_S``: they move slowly as the corpus grows. Several threads may
        read them at once after expiry; each stores the same thing."""
        now = time.monotonic()
        if self._centroids is None or now - self._centroids_at > self.CENTROIDS_TTL_S:
            self._centroids = read_centroids(self.store.search(self.alias, centroids_body()))
            self._centroids_at = now
        return self._centroids

    def _fetch_sources(self, fused: list[Fused], start: int, end: int) -> list[Fused]:
        """``fused`` with the ``_source`` of ``fused[start:end]`` attached (one search). A
        fact-check deleted since the candidate search keeps its doc values only."""
        ids = [f.id for f in fused[start:end]]
        if not ids:
            return fused
        found = sources_by_id(self.store.search(self.alias, sources_query(ids)))
        return fused[:start] + [with_source(f, found.get(f.id)) for f in fused[start:end]] + fused[end:]

    def _server_plan(self, cfg: RetrievalConfig, bodies: dict[str, Any], weights: dict[str, float],
                     size: int) -> ServerPlan | None:
        if self.explained or not self.server_fusion:
            return None
        if self._plugins is None:
            self._plugins = self.store.plugins()
        plan, why = server_plan(cfg, bodies, weights, size=size, plugins=self._plugins,
                                pipelines=self._installed_pipelines())
        stale = time.monotonic() - self._pipelines_read_at > self.PIPELINES_TTL_S
        if plan is None and why.pipeline is not None and stale:
            # installed since we last looked (`factsieve init` after this process started)?
            # look again at most every PIPELINES_TTL_S; meanwhile fuse client-side
            self._pipelines = None
        return plan

    def _installed_pipelines(self) -> set[str] | None:
        if self._plugins is not None and NEURAL_PLUGIN not in self._plugins:
            return set()
        if self._pipelines is None:
            self._pipelines = self.store.search_pipelines()
            self._pipelines_read_at = time.monotonic()
        return self._pipelines

    def _server_fuse(self, plan: ServerPlan) -> list[Fused]:
        """One hybrid query through its search pipeline (installed by ``factsieve init``)."""
        response = self.store.search(self.alias, plan.body, search_pipeline=plan.pipeline)
        hits = read_candidates(response, "hybrid")
        return [Fused(id=h.id, score=h.score, rank=h.rank, contributions={"hybrid": h}) for h in hits]

    def _rerank(self, text: str, fused: list[Fused], cfg: RetrievalConfig, decision: RerankDecision,
                lang: str | None) -> tuple[list[Fused], dict[str, float], str | None]:
        """The fused head's first ``decision.pairs`` in the cross-encoder's order
        (``rerank.reorder``; a ``cross`` head: ``rerank.promote_sure`` from ``decision.promote_at``),
        with each one's score; the cost of a pair measured for the gate. No pairs: as fused.
        A reranker that fails while scoring leaves the fused order, and the third item says why
        (its error, also logged): the match is still worth returning."""
        pairs = decision.pairs
        if not pairs or cfg.rerank is None or self.reranker is None:
            return fused, {}, None
        head = fused[:min(cfg.rerank.top, pairs)]
        t0 = self.clock()
        try:
            scores = self.reranker.score(text, [passage(f.source) for f in head])
        except Exception as exc:  # noqa: BLE001 (any backend's error: reported, not swallowed)
            why = exc.detail if isinstance(exc, FactSieveError) else f"{type(exc).__name__}: {exc}"
            name = getattr(self.reranker, "name", cfg.rerank.model)
            log.warning("configuration %r: reranker %r failed: %s", cfg.name, name, why)
            return fused, {}, f"the reranker {name!r} failed ({why}): {FUSED_ORDER}"
        if head:
            self.gate = self.gate.measured((self.clock() - t0) * 1e3 / len(head))
        ordered = (reorder(fused, scores, cfg.rerank) if decision.promote_at is None
                   else promote_sure(fused, scores, lang, decision.promote_at, cfg.rerank))
        return ordered, dict(zip((f.id for f in head), scores)), None
