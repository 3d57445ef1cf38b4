"""What one match searches, decided once from the request, the post's language and the
configuration: ``MatchPlan`` (pure), and the pure steps around fusion that follow from it."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from plugin.models import Fused, Hit, Mode
from plugin.search.centering import LanguageCentroids, language_offsets
from plugin.search.queries import Filters, bm25_query, filter_query, knn_query, knn_vector
from plugin.search.retrieval import Fusion, RetrievalConfig, RetrieverKind

#: the prefix of the own-language pass's sub-queries (``RetrievalConfig.own_language``)
OWN = "own:"

#: In auto mode, fact-checks in the post's own language get this multiplicative boost: about
#: half a rank at the top of an RRF list (1/61 vs 1/62), enough to break near-ties in favour
#: of the reader's language, never enough to bury a better match in another language.
SAME_LANG_BOOST = 1.01


@dataclass(frozen=True)
class MatchPlan:
    """The decisions a match takes before it searches.

    ``crosslingual``: the match crosses from the post's language to others (mode auto or cross,
    and a language detected). Three things follow from it and from nothing else: the retrievers'
    crosslingual weights (BM25 only ever finds same-language fact-checks, and weighting it as in
    mono mode buries a relevant fact-check in another language under same-language near-misses),
    BM25's stand-ins (``fuse.stand_in_terms``) and the centring of query vectors
    (``plugin.search.centering``). A post with no detected language (no letters) crosses from
    nothing: BM25 is no blinder to other languages than to its own there."""

    lang: str | None
    mode: Mode
    crosslingual: bool
    #: candidates each sub-query returns
    size: int
    filters: Filters
    #: fusion weight by retriever name (every retriever of the configuration)
    weights: dict[str, float] = field(default_factory=dict)
    #: ``{retriever: its stand-in}`` (crosslingual only)
    stand_ins: dict[str, str] = field(default_factory=dict)
    #: how far query vectors are centred (``RetrievalConfig.language_centering``; crosslingual only)
    centering: float = 0.0
    #: the factor for fact-checks in the post's language (auto mode)
    same_lang: float = 1.0
    #: the own-language pass's weight factor (auto mode with a detected language; 0: none)
    own_language: float = 0.0
    #: the share of a fact-check's language offset its admission as a better answer is judged
    #: without (``RetrievalConfig.admission_centering``; with the own-language pass only)
    admission_centering: float = 0.0

    @classmethod
    def decide(cls, req: Any, lang: str | None, config: RetrievalConfig) -> MatchPlan:
        """The plan for a ``MatchRequest`` whose post is in ``lang`` (``None``: not detected)."""
        mode = Mode.parse(config.mode) if config.mode else req.mode
        crosslingual = lang is not None and mode is not Mode.MONO
        mono = mode is Mode.MONO and lang is not None
        own = config.own_language if mode is Mode.AUTO and lang is not None else 0.0
        return cls(lang=lang, mode=mode, crosslingual=crosslingual, size=max(config.candidates, req.k),
                   filters=Filters(langs=(lang,) if mono else None, published_before=req.date,
                                   within_days=req.within_days, allow=tuple(req.allow),
                                   deny=tuple(req.deny)),
                   weights=config.weights(crosslingual=crosslingual),
                   stand_ins=config.stand_ins() if crosslingual else {},
                   centering=(config.language_centering or 0.0) if crosslingual else 0.0,
                   same_lang=SAME_LANG_BOOST if mode is Mode.AUTO else 1.0,
                   own_language=own,
                   admission_centering=config.admission_centering if own else 0.0)

    @property
    def needs_centroids(self) -> bool:
        """Whether the match reads the corpus's language centroids (``plugin.search.centering``):
        to centre its query vectors, or to judge a better answer without its language's offset."""
        return bool(self.centering or self.admission_centering)

    def queries(self, config: RetrievalConfig, texts: Mapping[str, str | None],
                vectors: Mapping[str, Any], raw: Mapping[str, Any] | None = None
                ) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
        """The sub-query bodies by retriever name, and their fusion weights, from each query
        variant's text and (dense) vector. A variant without text (a failed LLM call) sits out.
        With ``own_language``, each retriever again as ``own:<name>``: filtered to the post's
        language, with ``raw`` (the uncentred vectors; default ``vectors``), weighted as in
        mono mode times ``own_language``."""
        bodies = self._bodies(config, texts, vectors, filter_query(self.filters), "")
        weights = {name: w for name, w in self.weights.items() if name in bodies}
        if self.own_language > 0:
            own = replace(self.filters, langs=(self.lang,))
            bodies |= self._bodies(config, texts, raw if raw is not None else vectors, filter_query(own), OWN)
            weights |= {OWN + name: w * self.own_language for name, w in config.weights(crosslingual=False).items()
                        if OWN + name in bodies}
        return bodies, weights

    def _bodies(self, config: RetrievalConfig, texts: Mapping[str, str | None], vectors: Mapping[str, Any],
                flt: dict[str, Any] | None, prefix: str) -> dict[str, dict[str, Any]]:
        bodies = {}
        for r in config.retrievers:
            if not texts.get(r.query):
                continue
            if r.kind is RetrieverKind.BM25:
                # min-max fusion reads the lowest candidate score, which candidates sharing only
                # stop words with the post set: it keeps them (and ranks as the stored template)
                bodies[prefix + r.name] = bm25_query(texts[r.query], lang=self.lang, filters=flt, size=self.size,
                                                     split=config.fusion is not Fusion.MINMAX)
            else:
                bodies[prefix + r.name] = knn_query(vectors[r.query], filters=flt, size=self.size)
        return bodies


def admit_better_answers(rankings: Mapping[str, list[Hit]], lang: str | None,
                         stand_ins: Mapping[str, str],
                         offsets: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, list[Hit]]:
    """The own-language pass's rankings with the better answers in other languages admitted
    (pure): a fact-check in another language that its crosslingual dense sub-query scores at
    least as high as the best fact-check in the post's language there is the better answer, and
    ranks in each own-language sub-query above that language's candidates, in its dense order.
    Anything else in another language must win on the crosslingual sub-queries alone, where the
    own-language pass does not count for it. ``offsets[ranking][lang]``: what a fact-check in
    ``lang`` owes its language in that ranking's scores (``centering.language_offsets``), taken
    out of every score compared, the post language's best one's too.

    ``own:<name>`` (a dense retriever, or BM25 through its stand-in) reads ``<name>``'s ranking,
    or its stand-in's; a prefix (``ocr:``) before ``own:`` is kept. Rankings without an
    own-language twin are returned as they are."""
    out = dict(rankings)
    for key, hits in rankings.items():
        head, own, base = key.partition(OWN)
        if not own:
            continue
        name = head + stand_ins.get(base, base)
        source, owed = rankings.get(name, []), (offsets or {}).get(name, {})

        def judged(h: Hit) -> float:
            return h.score - owed.get((h.source or {}).get("lang") or "", 0.0)

        best = max((judged(h) for h in source if (h.source or {}).get("lang") == lang), default=None)
        better = [h for h in source if (other := (h.source or {}).get("lang")) and other != lang
                  and (best is None or judged(h) >= best)]
        if not better:
            continue
        ids = {h.id for h in better}
        ranked = [Hit(id=h.id, score=h.score, rank=i, query=key, source=h.source)
                  for i, h in enumerate(better, start=1)]
        out[key] = ranked + [Hit(id=h.id, score=h.score, rank=h.rank + len(ranked), query=key, source=h.source)
                             for h in hits if h.id not in ids]
    return out


def admission_offsets(bodies: Mapping[str, Mapping[str, Any]], centroids: LanguageCentroids | None,
                      share: float) -> dict[str, dict[str, float]] | None:
    """What the fact-checks of each kNN sub-query owe their languages, by sub-query name, for
    ``admit_better_answers`` (pure; ``centering.language_offsets`` of the vector each searched
    with); ``None`` without centroids or a share."""
    if centroids is None or not share:
        return None
    return {name: language_offsets(vector, centroids, share)
            for name, body in bodies.items() if (vector := knn_vector(body)) is not None}


def dense_variants(config: RetrievalConfig, texts: Mapping[str, str | None]) -> list[str]:
    """The query variants a dense retriever of ``config`` embeds (those with text), sorted."""
    return sorted({r.query for r in config.retrievers if r.kind is RetrieverKind.DENSE and texts.get(r.query)})


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
