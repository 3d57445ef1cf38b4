"""Run named retrieval configurations over a retrieval dataset (``plugin.learn.train.datasets``), side by
side."""
from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import date
from typing import Any

from plugin.embedding import Embedder
from plugin.search.generated import GENERATED
from plugin.search.matcher import Matcher, MatchRequest
from plugin.models import Mode
from plugin.search.retrieval import RetrievalConfig
from plugin.settings import Settings
from plugin.index.store import Store
from plugin.learn.train.datasets import Dataset, ensure_dataset_index
from plugin.lab.evaluate.metrics import evaluate_run, percentile


def run_config(matcher: Matcher, config: RetrievalConfig, queries: Iterable[dict[str, Any]],
               qrels: dict[str, set[str]], *, mode: Mode, depth: int = 100,
               use_dates: bool = False, budget_ms: float | None = None) -> dict[str, Any]:
    """Match every query that has qrels (a query's ``image``, an ``ImageAnalysis``, matched with
    its text as a post's image is); metrics overall and per query language. ``budget_ms``: each
    match gets this live rerank budget (``RerankGate``: sure heads skipped, heads cut to what
    the budget fits), as ``POST /v1/match`` serves it; the share reranked is reported."""
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    parts: dict[str, list[float]] = defaultdict(list)
    langs: dict[str, str] = {}
    paths: dict[str, int] = defaultdict(int)
    reranked = 0
    for q in queries:
        qid = str(q["id"])
        if qid not in qrels:
            continue
        when = date.fromisoformat(q["date"]) if use_dates and q.get("date") else None
        req = MatchRequest(text=q["text"], lang=q.get("lang"), date=when, mode=mode, k=depth,
                           image=q.get("image"), rerank_budget_ms=budget_ms)
        t0 = time.perf_counter()
        result = matcher.match(req, config)
        reranked += result.reranked
        latencies.append((time.perf_counter() - t0) * 1e3)
        for key, ms in result.timings_ms.items():
            parts[key].append(ms)
        run[qid] = [m["id"] for m in result.matches]
        paths[result.fusion] += 1
        langs[qid] = q.get("lang") or result.lang or "?"
    metrics = {k: round(v, 4) for k, v in evaluate_run(run, qrels).items()}
    per_lang: dict[str, Any] = {}
    for lang in sorted(set(langs.values())):
        sub = {q: rel for q, rel in qrels.items() if langs.get(q) == lang}
        per_lang[lang] = {"n": len(sub), **{k: round(v, 4) for k, v in
                                            evaluate_run(run, sub, ["S@10", "MAP@5", "MRR@10"]).items()}}
    return {**metrics, "n_queries": len(run), "reranked": round(reranked / max(len(run), 1), 4),
            # how many queries each fusion path answered (a configuration whose weights do not
            # fit a hybrid query fuses client-side even when the server path was asked for)
            "fusion": dict(sorted(paths.items())),
            "latency_ms": {"p50": round(percentile(latencies, 0.5), 2),
                           "p95": round(percentile(latencies, 0.95), 2),
                           "mean_parts": {k: round(statistics.fmean(v), 2) for k, v in parts.items()}},
            "per_lang": per_lang}


def training_queries(configs: dict[str, RetrievalConfig], settings: Settings,
                     dataset: Dataset) -> set[str]:
    """Query ids a trained reranker or query adapter of these configurations saw for this
    dataset: every configuration is then scored on the other queries only, so the comparison
    stays fair."""
    from plugin.embedding.adapter import find_adapter
    from plugin.errors import ModelUnavailable
    from plugin.search.rerank import read_manifest, resolve_reranker_path

    seen: set[str] = set()
    for cfg in configs.values():
        manifests = []
        if cfg.rerank is not None:
            folder = resolve_reranker_path(cfg.rerank.model, settings)
            manifests.append(read_manifest(folder) if folder else {})
        if cfg.query_encoder:
            try:
                manifests.append(dict(find_adapter(cfg.query_encoder, settings.query_adapter_dir).manifest))
            except ModelUnavailable:
                pass
        for manifest in manifests:
            seen |= trained_queries_of(manifest, dataset.path.name)
    return seen


def trained_queries_of(manifest: dict[str, Any], dataset_name: str) -> set[str]:
    """The queries of dataset ``dataset_name`` (its folder's name) a model's manifest says it
    trained on: its own list when it trained on that dataset alone, the matching entry of its
    ``sources`` when it trained on several (pure)."""
    sources = manifest.get("sources") or [manifest]
    return {str(q) for src in sources if src.get("dataset_name") == dataset_name
            for q in src.get("training_query_ids", [])}


def query_split(dataset: Dataset, scored: Iterable[str], excluded: set[str]) -> str:
    """Which of the dataset's queries were scored, as a name a recorded score is keyed by: their
    ``split`` values joined by ``+`` (CLEF-2020 without its training queries: ``dev+test``) when
    every scored query has one; otherwise ``all``, or ``all-but-training`` when a reranker's
    training queries were left out."""
    by_id = {str(q["id"]): q for q in dataset.queries}
    splits = {by_id.get(q, {}).get("split") for q in scored}
    if splits and None not in splits:
        return "+".join(sorted(splits))
    return "all-but-training" if excluded else "all"


def scored_modes(dataset: Dataset, mode: str | None,
                 keep: Callable[[dict[str, set[str]]], dict[str, set[str]]]) -> list[tuple[str, Mode, dict[str, set[str]]]]:
    """The matching modes a dataset is scored in, each with its kept qrels: mono and cross (on
    their own pairs) for a dataset with crosslingual pairs unless ``mode`` names one; else the
    one mode asked for, mono by default (CLEF-2020 T2 is a monolingual benchmark)."""
    if mode in (None, "both") and dataset.has_pair_kinds:
        return [("mono", Mode.MONO, keep(dataset.qrels["mono"])),
                ("cross", Mode.CROSS, keep(dataset.qrels["cross"]))]
    m = Mode.parse(mode or "mono")
    return [(m.value, m, keep(dataset.qrels["all"]))]


def evaluate(store: Store, embedder: Embedder, settings: Settings, dataset: Dataset,
             configs: dict[str, RetrievalConfig], *, mode: str | None = None,
             use_dates: bool = False, rerankers: dict[str, Any] | None = None,
             rebuild: bool = False, generate: Any = None,
             splits: Iterable[str] | None = None, live_budget_ms: float | None = None) -> dict[str, Any]:
    """The JSON the ``evaluate`` command prints: ``configs`` is ``{name: {mode: metrics}}`` for
    every configuration that ran, whatever the number of modes; ``skipped`` is ``{name: why}``
    for those that could not (a reranker that is not there). ``splits``: score only queries of
    these splits (``dev``, ``test``: the queries no trained model of ours saw, whether or not a
    reranker is loaded in this run). ``live_budget_ms``: every match within this rerank budget,
    as the live path serves it (each mode's key then ends ``-live``, a record of its own)."""
    alias, ingest_stats = ensure_dataset_index(store, embedder, dataset, settings, rebuild=rebuild)
    excluded = training_queries({n: c for n, c in configs.items()
                                 if n in (rerankers or {}) or c.query_encoder}, settings, dataset)
    if splits is not None:
        wanted = set(splits)
        excluded |= {str(q["id"]) for q in dataset.queries if q.get("split") not in wanted}

    def keep(qrels: dict[str, set[str]]) -> dict[str, set[str]]:
        return {q: rel for q, rel in qrels.items() if q not in excluded}

    modes = [(f"{name}-live" if live_budget_ms is not None else name, m, q) for name, m, q in scored_modes(dataset, mode, keep)]
    scored = keep(dataset.qrels["all"])
    out: dict[str, Any] = {"dataset": str(dataset.path), "n_queries": len(scored),
                           "excluded_training_queries": len(excluded & set(dataset.qrels["all"])),
                           "split": query_split(dataset, scored, excluded),
                           "n_factchecks": dataset.n_factchecks, "index": alias,
                           "extra_corpora": [str(p) for p in dataset.extra], "name": dataset.name,
                           "embedding_model": embedder.name, "dates": use_dates,
                           "modes": [name for name, _, _ in modes], "configs": {}, "skipped": {}}
    if ingest_stats:
        out["ingest"] = ingest_stats
    for name, cfg in configs.items():
        reranker = (rerankers or {}).get(name)
        matcher = Matcher(store, embedder, settings, alias=alias, config=cfg, reranker=reranker,
                          generate=generate)
        if cfg.rerank is not None and reranker is None:
            out["skipped"][name] = f"reranker {cfg.rerank.model!r} unavailable"
            continue
        if cfg.query_encoder and matcher.query_encoder_for(cfg) is None:
            out["skipped"][name] = matcher.query_encoder_note(cfg)
            continue
        llm_variants = sorted({r.query for r in cfg.retrievers} & set(GENERATED))
        if llm_variants and generate is None:
            out["skipped"][name] = f"query variants {llm_variants} need an LLM (FACTSIEVE_LLM_URL)"
            continue
        out["configs"][name] = {mname: run_config(matcher, cfg, dataset.queries, qrels, mode=m,
                                                  use_dates=use_dates, budget_ms=live_budget_ms)
                                for mname, m, qrels in modes}
        calibrator = None if use_dates or live_budget_ms is not None else matcher.calibrator_for(cfg)
        if calibrator is not None:  # the confidence model, measured as it was fitted
            from plugin.lab.calibrate import calibration_report, labelled_matches

            for mname, m, qrels in modes:
                data = labelled_matches(store, embedder, settings, dataset, cfg, mode=m, qrels=qrels,
                                        reranker=matcher.reranker)
                report = calibration_report(calibrator, data)
                out["configs"][name][mname]["calibration"] = {
                    "ECE": report.get("ECE"), "ECE@1": (report.get("top1") or {}).get("ECE"),
                    "ECE@1_95": (report.get("top1") or {}).get("ECE_95"),
                    "ECE@1_floor": (report.get("top1") or {}).get("ECE_floor"),
                    "per_lang": {lang: {"ECE": r["ECE"], "ECE@1": r["top1"]["ECE"], "top1": r["top1"]["matches"],
                                        "ECE@1_95": r["top1"].get("ECE_95"), "ECE@1_floor": r["top1"].get("ECE_floor")}
                                 for lang, r in report.get("per_lang", {}).items()},
                    "protocol": "each post with and without its fact-checks in the index"}
    return out
