"""Language centering of the query vector, for matching across languages.

Multilingual encoders keep a language component in every embedding: texts in one language sit
closer to each other than their meaning alone says (Libovický et al. 2020, *On the Language
Neutrality of Pre-trained Multilingual Representations*, remove it by subtracting each
language's centroid). A Korean post then finds Korean near-misses before the English
fact-check that addresses it (issue 12: the demo's Korean post, 4th with kNN alone).

FactSieve centres the *query* only, so that the index needs no second vector and any kNN
index works: ``q' = q − α (c_L − c̄)``, with ``c_L`` the mean embedding of the fact-checks in
the post's language ``L`` and ``c̄`` the mean over the sampled fact-checks of every language.
For a fact-check ``d``, ``q'·d = q·d − α (c_L − c̄)·d``: the documents that carry ``L``'s
component lose a little, the others none; within one language the order barely moves. Only
in crosslingual and auto mode: a monolingual search has nothing to correct.

**The better answer.** In auto mode a fact-check in another language ranks above the post's
own only as the better answer (``plan.admit_better_answers``): at least as similar to the centred
query as the best fact-check in the post's language. Centring the query alone leaves each
*fact-check's* language component in that comparison: ``q'·d`` for a fact-check in language ``M``
carries ``q'·(c_M − c̄)``, a head start for every language whose centroid the query happens to
lean towards. On a 30-language index that was what put a Tamil or Tagalog teaser ("You may like")
first for an English tweet whose English answer sat second. Libovický et al. centre *every*
language's vectors; ``language_offsets`` is that on the fact-check's side, ``γ q'·(c_M − c̄)`` per
language (``RetrievalConfig.admission_centering`` = γ), taken out of each fact-check's score
before the comparison and nowhere else, so no vector is stored twice and the ranking within a
language never moves.

The centroids are corpus statistics, read with one aggregation (a diversified sample of at
most ``PER_LANGUAGE`` fact-checks per language) and cached by the matcher.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: fact-checks sampled per language (the mean of 500 unit vectors is stable to a few percent)
PER_LANGUAGE = 500
#: a language with fewer fact-checks has no centroid (too noisy to subtract)
MIN_DOCS = 5

_MAP = ("def v = doc[params.field].getValue(); if (state.sum == null) { state.sum = new double[v.length]; }"
        " for (int i = 0; i < v.length; ++i) { state.sum[i] += v[i]; } state.n += 1;")
_REDUCE = ("double[] s = null; long n = 0; for (st in states) { if (st == null || st.sum == null) continue;"
           " if (s == null) { s = new double[st.sum.length]; }"
           " for (int i = 0; i < s.length; ++i) { s[i] += st.sum[i]; } n += st.n; }"
           " return ['n': n, 'sum': s];")


@dataclass(frozen=True)
class LanguageCentroids:
    """Per-language mean embeddings (``centroids[lang]``) and the mean over all sampled ones."""

    centroids: dict[str, np.ndarray] = field(default_factory=dict)
    mean: np.ndarray | None = None
    counts: dict[str, int] = field(default_factory=dict)


def centroids_body(field_name: str = "embedding", per_language: int = PER_LANGUAGE,
                   languages: int = 200) -> dict[str, Any]:
    """One search that sums the vectors of up to ``per_language`` fact-checks per language."""
    metric = {"scripted_metric": {
        "params": {"field": field_name},
        "init_script": "state.sum = null; state.n = 0",
        "map_script": _MAP, "combine_script": "return state", "reduce_script": _REDUCE}}
    return {"size": 0, "track_total_hits": False, "aggs": {"sample": {
        "diversified_sampler": {"shard_size": 100_000, "field": "lang", "max_docs_per_value": per_language},
        "aggs": {"langs": {"terms": {"field": "lang", "size": languages},
                           "aggs": {"centroid": metric}}}}}}


def read_centroids(response: dict[str, Any], min_docs: int = MIN_DOCS) -> LanguageCentroids:
    """``LanguageCentroids`` from ``centroids_body``'s response (pure)."""
    buckets = (((response.get("aggregations") or {}).get("sample") or {}).get("langs") or {}).get("buckets", [])
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, int] = {}
    for b in buckets:
        value = (b.get("centroid") or {}).get("value") or {}
        if value.get("sum") and value.get("n"):
            sums[str(b["key"])] = np.asarray(value["sum"], dtype="float64")
            counts[str(b["key"])] = int(value["n"])
    if not sums:
        return LanguageCentroids()
    total = sum(counts.values())
    mean = sum(sums.values()) / total
    centroids = {lang: s / counts[lang] for lang, s in sums.items() if counts[lang] >= min_docs}
    return LanguageCentroids(centroids=centroids, mean=mean, counts=counts)


def center_query(vector: Any, lang: str | None, centroids: LanguageCentroids, alpha: float) -> np.ndarray:
    """``normalize(q − α (c_lang − c̄))``; ``q`` itself when ``alpha`` is 0 or ``lang`` has no
    centroid (pure; a new array)."""
    q = np.asarray(vector, dtype="float64")
    c = centroids.centroids.get(lang or "")
    if alpha == 0 or c is None or centroids.mean is None:
        return q.astype("float32")
    out = q - alpha * (c - centroids.mean)
    norm = np.linalg.norm(out)
    return (out / (norm or 1.0)).astype("float32")


def language_offsets(vector: Any, centroids: LanguageCentroids, share: float) -> dict[str, float]:
    """``{M: share · q·(c_M − c̄) / 2}`` for every language ``M`` with a centroid (pure): what a
    fact-check in ``M`` owes its language in a kNN score of query ``q`` (the Lucene engine's
    cosine score is ``(1 + cos) / 2``, hence the half). Empty without a mean or a share."""
    if not share or centroids.mean is None:
        return {}
    q = np.asarray(vector, dtype="float64")
    return {lang: float(share * (q @ (c - centroids.mean)) / 2.0) for lang, c in centroids.centroids.items()}
