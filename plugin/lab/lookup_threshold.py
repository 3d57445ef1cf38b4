"""Measure the lookup threshold: the best match's similarity above which a published rating
answers a claim (``lookup_min_score`` in ``plugin/verify/configs/verification.json``), scoring the
first match of CLEF-2020 dev+test tweets (answered right, answered wrong, their fact-checks
removed) and of AVeriTeC dev claims. The cases and caveats: ``docs/design/lookup-threshold.md``.

Run: ``factsieve lookup-threshold [--clef DIR] [--averitec DIR] [--fixture FILE]``
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from plugin.errors import FactSieveError
from plugin.learn.train.datasets import ensure_dataset_index, load_dataset
from plugin.lab.excluding import DUPLICATE_JACCARD, ExcludingMatcher, claim_words, duplicates_of
from plugin.lab.threshold import choose_threshold, config_threshold, distribution, operating_point
from plugin.models import Mode
from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.retrieval import RetrievalConfig

#: what the lookup asks for (``Verifier._lookup``)
LOOKUP_K = 5
#: AVeriTeC dev claims whose first CLEF match states the same claim, by reading the 32
#: highest-scoring ones (claim id → fact-check id): RBG on paedophilia, Sean Connery's letter to
#: Apple, abortion rates under Democratic presidents, Schumer's alleged affair, the Trump
#: children's charity ban. The next (0.946: "5G causes COVID-19" → 5G and bird deaths) and those
#: below are other claims on a shared topic.
AVERITEC_COVERED = {"dev-311": "8100", "dev-0": "1605", "dev-350": "3034", "dev-165": "688",
                    "dev-64": "482"}


# -- pure parts -------------------------------------------------------------------------------------
def similarity(match: dict[str, Any]) -> float | None:
    """The score the lookup compares with its threshold: the match's best kNN score (as
    ``plugin.verify.verifier.similarity``, imported lazily to keep this module light)."""
    from plugin.verify.lookup import similarity as verifier_similarity

    return verifier_similarity(match)


def eval_queries(queries: Iterable[dict[str, Any]], qrels: dict[str, set[str]]) -> list[dict[str, Any]]:
    """The queries scored: those with qrels, the training split left out (as ``evaluate``)."""
    return [q for q in queries if str(q["id"]) in qrels and q.get("split") != "train"]


# -- matching ---------------------------------------------------------------------------------------
def lookup_request(text: str, when: date | None = None) -> MatchRequest:
    """The request ``Verifier._lookup`` sends for a claim with no language given."""
    return MatchRequest(text=text, lang=None, date=when, mode=Mode.AUTO, k=LOOKUP_K)


def first_match(result: Any) -> dict[str, Any]:
    """The match the lookup looks at, its similarity and fused score (None when no match)."""
    best = result.matches[0] if result.matches else None
    if best is None:
        return {"id": None, "similarity": None, "score": None}
    sim = similarity(best)
    if sim is None:
        raise FactSieveError(f"the first match {best['id']!r} has no kNN score in its explanation "
                             f"({sorted(best.get('explain') or {})}): server-side fusion hides it "
                             "from the lookup, which then never answers")
    return {"id": best["id"], "similarity": sim, "score": best["score"]}


def collect_clef(matcher: ExcludingMatcher, queries: Sequence[dict[str, Any]],
                 qrels: dict[str, set[str]],
                 words: dict[str, frozenset[str]] | None = None) -> list[dict[str, Any]]:
    """Per tweet: the first match with every fact-check indexed, and with the ones that answer
    it (its relevant fact-checks and their near-duplicates among ``words``, the corpus's
    ``claim_words``) excluded. Dates are off, as in ``evaluate`` (the CLEF corpus has none)."""
    rows = []
    for q in queries:
        qid, relevant = str(q["id"]), qrels[str(q["id"])]
        answers = duplicates_of(relevant, words) if words else set(relevant)
        req = lookup_request(q["text"])
        full = first_match(matcher.match(req))
        removed = first_match(matcher.match_without(req, answers))
        rows.append({"id": qid, "relevant": sorted(relevant), "answers": sorted(answers),
                     "first": full, "first_relevant": full["id"] in answers,
                     "first_in_qrels": full["id"] in relevant, "removed": removed})
    return rows


def collect_claims(matcher: Matcher, claims: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per claim: the first match, the claim dated as the lookup dates it."""
    rows = []
    for c in claims:
        when = date.fromisoformat(c["date"]) if c.get("date") else None
        first = first_match(matcher.match(lookup_request(c["claim"], when)))
        rows.append({"id": str(c["id"]), "first": first,
                     "covered": first["id"] is not None and AVERITEC_COVERED.get(str(c["id"])) == first["id"]})
    return rows


def summarise(clef: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]], *,
              min_precision: float) -> dict[str, Any]:
    """Distributions, the chosen threshold and the share of each negative set answered."""
    def sims(rows: Iterable[dict[str, Any]], key: str = "first") -> list[float]:
        return [r[key]["similarity"] for r in rows if r[key]["similarity"] is not None]

    pos = sims(r for r in clef if r["first_relevant"])
    wrong = sims(r for r in clef if not r["first_relevant"])
    removed = sims(clef, "removed")
    averitec = sims(other)
    covered = sims(r for r in other if r.get("covered"))
    uncovered = sims(r for r in other if not r.get("covered"))
    negatives = {"wrong_first_match": wrong, "relevant_removed": removed, "averitec": averitec}
    chosen = choose_threshold(pos, wrong + removed + averitec, min_precision=min_precision,
                              n_positive=len(clef))
    alternatives = {}
    cases = {"all": (pos, wrong + removed + averitec, len(clef)),
             "clef_only": (pos, wrong + removed, len(clef)),
             "read": (pos + covered, wrong + removed + uncovered, len(clef) + len(covered))}
    for negs_name, (good, negs, n_good) in cases.items():
        for p in sorted({0.9, 0.95, min_precision}):
            alt = choose_threshold(good, negs, min_precision=p, n_positive=n_good, quantiles=())
            alternatives[f"{negs_name}@{p}"] = {k: alt[k] for k in ("threshold", "precision", "recall",
                                                                    "answered", "wrong", "n_negative")}
    out: dict[str, Any] = {
        "distributions": {"positives": distribution(pos),
                          **{k: distribution(v) for k, v in negatives.items()}},
        "fused_score": {"positives": distribution([r["first"]["score"] for r in clef if r["first_relevant"]]),
                        "relevant_removed": distribution([r["removed"]["score"] for r in clef
                                                          if r["removed"]["score"] is not None]),
                        "averitec": distribution([r["first"]["score"] for r in other
                                                  if r["first"]["score"] is not None])},
        "chosen": chosen,
        "alternatives": alternatives,
        "averitec_covered_by_reading": len(covered),
        "S@1": round(len(pos) / len(clef), 4) if clef else 0.0,
        "S@1_qrels_only": round(sum(1 for r in clef if r.get("first_in_qrels", r["first_relevant"]))
                                / len(clef), 4) if clef else 0.0,
        "queries_with_duplicates": sum(1 for r in clef if len(r.get("answers", r["relevant"])) > len(r["relevant"])),
    }
    if chosen["threshold"] is not None:
        config_value = config_threshold(pos, wrong + removed + averitec, chosen["threshold"],
                                        min_precision=min_precision, n_positive=len(clef))
        point = operating_point(pos, wrong + removed + averitec, config_value, n_positive=len(clef))
        out["config_value"] = config_value
        out["at_config_value"] = {**point, "answered_share": {
            k: round(sum(1 for s in v if s >= config_value) / len(v), 4) if v else None
            for k, v in negatives.items()}}
    return out


# -- the run ----------------------------------------------------------------------------------------
def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def fixture_similarity(services: Any, cfg: RetrievalConfig, path: Path,
                       claims: Sequence[str]) -> dict[str, Any]:
    """The first match of each claim over the fact-checks in ``path`` (a JSON Lines file such
    as the integration tests' corpus), indexed in a throwaway alias that is removed after."""
    from plugin.index.templates import IndexSpec, ensure_index
    from plugin.ingest import Format, ingest, read_records

    store, embedder = services.store, services.embedder
    alias = f"lab-lookup-fixture-{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]}"
    ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))
    try:
        ingest(read_records([path], Format.jsonl), store=store, embedder=embedder, index=alias)
        matcher = Matcher(store, embedder, services.settings, alias=alias, config=cfg, explained=True)
        return {claim: first_match(matcher.match(lookup_request(claim))) for claim in claims}
    finally:
        store.delete_index(f"{alias}-v*")
        store.delete_index_template(f"factsieve-{alias}")


def measure(services: Any, *, clef: Path, averitec: Path, retrieval: str = "factsieve",
            min_precision: float = 0.95, fixture: Path | None = None,
            fixture_claims: Sequence[str] = (),
            log: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Build (or reuse) the CLEF evaluation index, collect every case, choose the threshold."""
    t0 = time.perf_counter()
    dataset = load_dataset(clef)
    settings, store, embedder = services.settings, services.store, services.embedder
    log(f"index for {dataset.name} ({dataset.n_factchecks} fact-checks)…")
    alias, ingest_stats = ensure_dataset_index(store, embedder, dataset, settings)
    index_s = time.perf_counter() - t0
    cfg = services.config(retrieval)
    # the lookup's own matcher (``Verification.verifier``'s lookup): it holds a reranker if the configuration has one
    reranker = services.matcher(retrieval, rerank=True).reranker
    matcher = ExcludingMatcher(store, embedder, settings, alias=alias, config=cfg, reranker=reranker,
                               explained=True)  # as the lookup's own matcher: it reads the kNN score
    queries = eval_queries(dataset.queries, dataset.qrels["all"])
    log(f"{len(queries)} CLEF queries…")
    t1 = time.perf_counter()
    words = claim_words({str(r["id"]): r.get("claim") or ""
                         for r in _read_jsonl(dataset.path / "factchecks.jsonl")})
    clef_rows = collect_clef(matcher, queries, dataset.qrels["all"], words)
    claims = _read_jsonl(Path(averitec) / "claims.jsonl")
    log(f"{len(claims)} AVeriTeC claims…")
    other_rows = collect_claims(matcher, claims)
    match_s = time.perf_counter() - t1
    out: dict[str, Any] = {
        "retrieval": retrieval, "mode": "auto", "k": LOOKUP_K, "index": alias,
        "embedding_model": embedder.name, "reranked": reranker is not None,
        "clef": {"dataset": str(dataset.path), "split": "dev+test", "n_queries": len(queries),
                 "n_factchecks": dataset.n_factchecks, "duplicate_jaccard": DUPLICATE_JACCARD},
        "averitec": {"claims": str(Path(averitec) / "claims.jsonl"), "n_claims": len(claims)},
        **summarise(clef_rows, other_rows, min_precision=min_precision),
    }
    if fixture is not None:
        out["fixture"] = {"path": str(fixture),
                          "first_match": fixture_similarity(services, cfg, fixture, fixture_claims)}
    out["seconds"] = {"index": round(index_s, 1), "matching": round(match_s, 1),
                      "matches": 2 * len(queries) + len(claims),
                      "total": round(time.perf_counter() - t0, 1)}
    if ingest_stats:
        out["ingest"] = ingest_stats
    return out


