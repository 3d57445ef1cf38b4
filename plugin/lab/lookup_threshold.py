"""Measure the lookup threshold: the best match's similarity above which a published rating
answers a claim (``lookup_min_score`` in ``plugin/verify/configs/verification.json``), scoring the
first match of CLEF-2020 dev+test tweets (answered right, answered wrong, their fact-checks
removed) and of AVeriTeC dev claims. The cases and caveats: ``docs/design/lookup-threshold.md``.

Run: ``python -m plugin.lab.lookup_threshold [--clef DIR] [--averitec DIR] [--fixture FILE] --json``
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from plugin.errors import FactSieveError
from plugin.lab.evaluate.metrics import percentile
from plugin.models import Mode
from plugin.search.duplicates import DUPLICATE_JACCARD, claim_words, duplicates_of
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
#: quantiles of all scores at which the precision/recall curve is reported
CURVE_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
DEFAULT_CLEF = Path("../shared/data/clef2020_task2")
DEFAULT_AVERITEC = Path("../shared/data/averitec_dev")


# -- pure parts -------------------------------------------------------------------------------------
def similarity(match: dict[str, Any]) -> float | None:
    """The score the lookup compares with its threshold: the match's best kNN score (as
    ``plugin.verify.verifier.similarity``, imported lazily to keep this module light)."""
    from plugin.verify.verifier import similarity as verifier_similarity

    return verifier_similarity(match)


def exclude_ids(body: dict[str, Any], ids: Sequence[str]) -> dict[str, Any]:
    """A copy of a candidate-search body (``bm25_query`` or ``knn_query``) that never returns the
    fact-checks ``ids``: a ``must_not ids`` clause in the BM25 ``bool``, and in the kNN query's
    filter (applied inside the graph search, so the k nearest *remaining* come back)."""
    out = json.loads(json.dumps(body))
    if not ids:
        return out
    clause = {"ids": {"values": list(ids)}}
    query = out["query"]
    if "knn" in query:
        for knn in query["knn"].values():
            old = knn.get("filter")
            knn["filter"] = {"bool": {**({"filter": [old]} if old else {}), "must_not": [clause]}}
    elif "bool" in query:
        query["bool"]["must_not"] = [*query["bool"].get("must_not", []), clause]
    else:
        raise ValueError(f"cannot exclude ids from a query of kind {sorted(query)}")
    return out


def operating_point(pos_scores: Sequence[float], neg_scores: Sequence[float], threshold: float,
                    *, n_positive: int | None = None) -> dict[str, Any]:
    """Answer every case scoring ≥ ``threshold``: precision = right answers among all answers
    (a negative answered is an error), recall = right answers among ``n_positive`` (default: the
    positives given). Precision is 1.0 when nothing is answered (no answer, no error)."""
    tp = sum(1 for s in pos_scores if s >= threshold)
    fp = sum(1 for s in neg_scores if s >= threshold)
    total = len(pos_scores) if n_positive is None else n_positive
    return {"threshold": threshold, "answered": tp + fp, "correct": tp, "wrong": fp,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / total if total else 0.0}


def choose_threshold(pos_scores: Sequence[float], neg_scores: Sequence[float], *,
                     min_precision: float = 0.95, n_positive: int | None = None,
                     quantiles: Sequence[float] = CURVE_QUANTILES) -> dict[str, Any]:
    """The lowest threshold whose precision is at least ``min_precision``.

    Candidates are the observed scores (between two of them the answered set does not change),
    so the threshold is always a score that occurred. Precision is not monotone in the threshold;
    the lowest qualifying one is taken as asked, and the curve shows what lies above it. Returns
    ``threshold`` (``None`` when no observed score qualifies) with its ``precision``, ``recall``
    and counts, and ``curve``: the operating points at the given quantiles of all scores.
    """
    if not 0.0 < min_precision <= 1.0:
        raise ValueError(f"min_precision must be in (0, 1], got {min_precision}")
    pooled = sorted({*pos_scores, *neg_scores})
    chosen: dict[str, Any] | None = None
    for t in pooled:
        point = operating_point(pos_scores, neg_scores, t, n_positive=n_positive)
        if point["correct"] and point["precision"] >= min_precision:
            chosen = point
            break
    every = [*pos_scores, *neg_scores]
    curve = [{"quantile": q, **operating_point(pos_scores, neg_scores, percentile(every, q),
                                               n_positive=n_positive)}
             for q in quantiles] if every else []
    base = chosen or {"threshold": None, "answered": 0, "correct": 0, "wrong": 0,
                      "precision": None, "recall": 0.0}
    return {**base, "min_precision": min_precision, "n_positive": len(pos_scores),
            "n_negative": len(neg_scores), "curve": curve}


def config_threshold(pos_scores: Sequence[float], neg_scores: Sequence[float], threshold: float, *,
                     min_precision: float, n_positive: int | None = None, digits: int = 4) -> float:
    """The value to write in the configuration: the lowest number of ``digits`` decimals, from
    ``threshold`` rounded down, whose operating point still reaches ``min_precision`` (rounding
    the measured threshold up would drop the positive it sits on; down may let a negative in)."""
    scale = 10 ** digits
    step = math.floor(round(threshold * scale, 9))
    top = max([*pos_scores, *neg_scores, threshold])
    while step / scale <= top:
        point = operating_point(pos_scores, neg_scores, step / scale, n_positive=n_positive)
        if point["correct"] and point["precision"] >= min_precision:
            return step / scale
        step += 1
    return math.ceil(round(threshold * scale, 9)) / scale


def distribution(scores: Sequence[float]) -> dict[str, Any]:
    """n, p10 / p50 / p90 (nearest rank), min and max of ``scores``."""
    if not scores:
        return {"n": 0}
    return {"n": len(scores), "p10": percentile(scores, 0.1), "p50": percentile(scores, 0.5),
            "p90": percentile(scores, 0.9), "min": min(scores), "max": max(scores)}


def eval_queries(queries: Iterable[dict[str, Any]], qrels: dict[str, set[str]]) -> list[dict[str, Any]]:
    """The queries scored: those with qrels, the training split left out (as ``evaluate``)."""
    return [q for q in queries if str(q["id"]) in qrels and q.get("split") != "train"]


# -- matching ---------------------------------------------------------------------------------------
class ExcludingMatcher(Matcher):
    """A ``Matcher`` whose ``match_without`` leaves given fact-checks out of every sub-query,
    as if they were not indexed. Not thread-safe: the exclusion lives on the instance for the
    duration of one call (a lab tool, run sequentially)."""

    _excluded: tuple[str, ...] = ()

    def plan(self, req: MatchRequest, text: str, lang: str | None, config: RetrievalConfig,
             **kw: Any) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
        bodies, weights = super().plan(req, text, lang, config, **kw)
        if self._excluded:
            bodies = {name: exclude_ids(body, self._excluded) for name, body in bodies.items()}
        return bodies, weights

    def match_without(self, req: MatchRequest, ids: Iterable[str]) -> Any:
        self._excluded = tuple(sorted(ids))
        try:
            return self.match(req)
        finally:
            self._excluded = ()


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
    from plugin.lab.evaluate.run import ensure_dataset_index, load_dataset

    t0 = time.perf_counter()
    dataset = load_dataset(clef)
    settings, store, embedder = services.settings, services.store, services.embedder
    log(f"index for {dataset.name} ({dataset.n_factchecks} fact-checks)…")
    alias, ingest_stats = ensure_dataset_index(store, embedder, dataset, settings)
    index_s = time.perf_counter() - t0
    cfg = services.config(retrieval)
    # the lookup's own matcher (``Services.verifier``): it holds a reranker if the configuration has one
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plugin.lab.lookup_threshold",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--clef", type=Path, default=DEFAULT_CLEF,
                        help="CLEF-2020 task 2 dataset folder (factchecks/queries/qrels.jsonl)")
    parser.add_argument("--averitec", type=Path, default=DEFAULT_AVERITEC,
                        help="folder with the AVeriTeC dev claims.jsonl")
    parser.add_argument("--retrieval", default="factsieve", help="retrieval configuration")
    parser.add_argument("--min-precision", type=float, default=0.95)
    parser.add_argument("--fixture", type=Path, default=None,
                        help="also match --fixture-claim against this JSON Lines corpus")
    parser.add_argument("--fixture-claim", action="append", default=[],
                        help="a claim to match against --fixture (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    from plugin.service.services import Services
    from plugin.settings import Settings

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        out = measure(Services(Settings()), clef=args.clef, averitec=args.averitec,
                      retrieval=args.retrieval, min_precision=args.min_precision,
                      fixture=args.fixture, fixture_claims=args.fixture_claim, log=log)
    except FactSieveError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        c = out["chosen"]
        print(f"threshold {c['threshold']} (config {out.get('config_value')}): precision "
              f"{c['precision']}, recall {c['recall']}")
        for name, d in out["distributions"].items():
            print(f"  {name}: {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
