"""``factsieve evaluate-verification``: named verification configurations over an AVeriTeC-shaped
``claims.jsonl``, scored as the shared task scores them (``plugin.verify.scoring``).

The AVeriTeC knowledge store is not obtainable here, so ``--evidence retrieved`` searches a pool
built from the dataset itself: every claim's gold answers as passages with their source URLs,
dated the day before their claim (``"pool": "gold-answers"``). Each claim searches the whole
pool (hundreds of other claims' answers are its distractors), never only its own answers, and
never its fact-checking article. ``--evidence gold`` feeds the gold question–answer pairs to the
verdict step alone, separating verdict quality from retrieval quality.

A claim whose run fails (an LLM answer that does not fit its schema twice, an LLM timeout) has
no valid structured result: it is counted in ``valid_rate`` and scored as an abstention — "Not
Enough Evidence" with no evidence — never given an invented verdict.
"""
from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from plugin.errors import BadInput, FactSieveError
from plugin.lab.evaluate.metrics import percentile
from plugin.models import Verdict
from plugin.verify.averitec import gold_answer_documents, gold_qa_pairs
from plugin.verify.config import Strategy, VerificationConfig
from plugin.verify.result import VerificationResult
from plugin.verify.scoring import score_predictions
from plugin.verify.verifier import Verifier, VerifyRequest
from plugin.service.keys import DEFAULT_TENANT

ABSTAIN = Verdict.NOT_ENOUGH_EVIDENCE.value
#: bumped whenever the pool's documents change (2: passages no longer titled with the gold question)
POOL_VERSION = 2


def pool_alias(claims: Sequence[dict[str, Any]], model: str) -> str:
    """One evaluation evidence index per (claims, model): rebuilt only when either changes."""
    digest = hashlib.sha1(json.dumps([POOL_VERSION, [c["id"] for c in claims]]).encode()
                          + model.encode()).hexdigest()[:8]
    return f"eval-averitec-pool-{digest}"


def build_pool(services: Any, claims: Sequence[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The gold-answers evidence pool of ``claims`` (created once, reused after)."""
    from plugin.evidence import ensure_evidence_index, ingest_evidence, parse

    alias = pool_alias(claims, services.embedder.name)
    if services.store.index_exists(alias) and services.store.count(alias) > 0:
        return alias, {"reused": True, "passages": services.store.count(alias)}
    ensure_evidence_index(services.store, services.settings, services.embedder, alias)
    lines = (json.dumps(d, ensure_ascii=False) for d in gold_answer_documents(claims))
    report = ingest_evidence(parse(lines, "gold-answers"), store=services.store,
                             embedder=services.embedder, index=alias,
                             batch_size=services.settings.embedding_batch_size)
    return alias, {"reused": False, **report.to_dict(), "rejects": report.rejects[:5]}


def request_for(claim: dict[str, Any], evidence: str) -> VerifyRequest:
    article = claim.get("fact_checking_article")
    return VerifyRequest(claim=claim["claim"], date=date.fromisoformat(claim["date"]) if claim.get("date") else None,
                         lang=claim.get("lang"), exclude_urls=(article,) if article else (),
                         claim_id=claim.get("id"),
                         gold_qa=tuple(gold_qa_pairs(claim)) if evidence == "gold" else None)


def prediction(claim_id: str, out: VerificationResult | None) -> dict[str, Any]:
    if out is None:
        return {"id": claim_id, "pred_label": ABSTAIN, "evidence": []}
    return {"id": claim_id, "pred_label": out.outcome.verdict,
            "evidence": [{"question": p["question"], "answer": p["answer"], "url": p.get("source_url")}
                         for p in out.outcome.qa_pairs]}


def run_config(verifier: Verifier, cfg: VerificationConfig, claims: Sequence[dict[str, Any]],
               evidence: str, *, on_claim: Callable[[str, int], None] | None = None
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Predictions for every claim and what they cost (seconds, tokens, failures by reason)."""
    preds, seconds, tokens, failures, stops, stages, sources = [], [], [], {}, {}, {}, {}
    examples: dict[str, str] = {}
    stage_ms: dict[str, float] = {}
    for i, claim in enumerate(claims):
        if on_claim:
            on_claim(cfg.name, i)
        t0 = time.perf_counter()
        out: VerificationResult | None
        try:
            out = verifier.verify(request_for(claim, evidence), cfg)
        except FactSieveError as exc:
            out = None
            failures[exc.title] = failures.get(exc.title, 0) + 1
            examples.setdefault(exc.title, str(exc)[:300])
        seconds.append(time.perf_counter() - t0)
        preds.append(prediction(claim["id"], out))
        if out is not None:
            found = out.outcome
            tokens.append(out.tokens.prompt + out.tokens.completion)
            stops[found.stopped_because] = stops.get(found.stopped_because, 0) + 1
            stages[found.stage] = stages.get(found.stage, 0) + 1
            # how often the LLM's output was invalid: a fallback is ``head`` or ``none`` with a reason
            source = found.verdict_source + (" (fallback)" if found.fallback_reason else "")
            sources[source] = sources.get(source, 0) + 1
            for step, ms in out.timings_ms.items():
                stage_ms[step] = stage_ms.get(step, 0.0) + ms
    done = max(len(tokens), 1)
    cost = {"seconds_per_claim": {"p50": round(percentile(seconds, 0.5), 2),
                                  "p95": round(percentile(seconds, 0.95), 2),
                                  "mean": round(statistics.fmean(seconds), 2)},
            "tokens_per_claim": {"p50": round(percentile(tokens, 0.5), 1) if tokens else 0,
                                 "p95": round(percentile(tokens, 0.95), 1) if tokens else 0},
            "valid_rate": round((len(claims) - sum(failures.values())) / len(claims), 4),
            "failures": failures, "failure_examples": examples, "stopped_because": stops,
            "stages": stages, "verdict_sources": sources,
            # where the time goes: mean milliseconds per valid claim in each step (``total`` too)
            "ms_per_step": {k: round(v / done, 1) for k, v in sorted(stage_ms.items())}}
    return preds, cost


def evaluate_verification(services: Any, dataset: str, claims: list[dict[str, Any]],
                          configs: dict[str, VerificationConfig], *, evidence: str = "retrieved",
                          limit: int | None = None,
                          on_claim: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """Every configuration over the first ``limit`` claims; the JSON the command prints."""
    if evidence not in ("gold", "retrieved"):
        raise BadInput(f"--evidence must be gold or retrieved, not {evidence!r}")
    if not claims:
        raise BadInput("the dataset has no claims")
    scored = claims[:limit] if limit else claims
    result: dict[str, Any] = {"dataset": dataset, "n_claims": len(scored), "pool": None,
                              "evidence": evidence, "configs": {}}
    retriever = None
    if evidence == "retrieved" and any(c.strategy is not Strategy.LOOKUP for c in configs.values()):
        from plugin.evidence.retrieve import EvidenceRetriever

        alias, built = build_pool(services, claims)
        result["pool"], result["pool_index"] = "gold-answers", {"alias": alias, **built}
        retriever = EvidenceRetriever(services.store, services.embedder, services.settings, alias=alias)
    for name, cfg in configs.items():
        if evidence == "gold" and cfg.strategy is Strategy.LOOKUP:
            result["configs"][name] = {"skipped": "the lookup reads published fact-checks, not evidence"}
            continue
        base = services.verification.verifier(cfg, DEFAULT_TENANT)
        verifier = Verifier(llm=base.llm, lookup=base.lookup, pool=base.pool, head=base.head,
                            evidence=retriever if retriever is not None else base.evidence,
                            head_weight=base.head_weight)
        preds, cost = run_config(verifier, cfg, scored, evidence, on_claim=on_claim)
        # an LLM configuration holds the head for its fallback: in-sample only when it decided
        head_decided = any(k.startswith(("head", "llm+head")) for k in cost["verdict_sources"])
        leak = head_trained_on(base.head, dataset) if head_decided else None
        scores = score_predictions(scored, preds)
        result["configs"][name] = {
            "label_accuracy": round(scores["label_accuracy"], 4), "macro_f1": round(scores["macro_f1"], 4),
            "majority_macro_f1": round(scores["majority_macro_f1"], 4),
            "per_class_f1": {k: round(v, 4) for k, v in scores["per_class_f1"].items()},
            "confusion": scores["confusion"], "q_only": round(scores["q_only"], 4),
            "q_plus_a": round(scores["q_plus_a"], 4),
            "averitec_score": {k: round(v, 4) for k, v in scores["averitec_score"].items()},
            **cost}
        if cfg.strategy in (Strategy.QA_LOOP, Strategy.SINGLE_CALL):
            result["configs"][name]["head_weight"] = (verifier.head_weight if cfg.head_weight is None
                                                      else cfg.head_weight) if base.head else 0.0
        if leak:
            result["configs"][name]["in_sample"] = leak
    return result


def head_trained_on(head: Any, dataset: str) -> str | None:
    """Why a verdict model's scores on ``dataset`` are in-sample (it was trained on those
    claims), else None. A relative path in its manifest is where training ran from: the
    repository's root (``train-verdict``'s defaults) or, failing that, this working directory."""
    from pathlib import Path

    import plugin

    if head is None:
        return None
    root = Path(plugin.__file__).resolve().parents[1]
    target = Path(dataset).resolve()
    data = head.manifest.get("data") or {}
    for name, spec in (data.items() if isinstance(data, dict) else []):
        path = spec.get("path") if isinstance(spec, dict) else None
        if path and target in {Path(path).resolve(), (root / path).resolve()}:
            return (f"the verdict model was trained on these claims ({name}): its scores here are "
                    "in-sample; its cross-validated scores are in its manifest (cv)")
    return None


def table(result: dict[str, Any]) -> str:
    """The result for people: one line per configuration."""
    lines = [f"{result['dataset']}  ({result['n_claims']} claims, evidence {result['evidence']}, "
             f"pool {result['pool']})",
             f"{'config':<14}{'acc':>7}{'macroF1':>9}{'Q-only':>8}{'Q+A':>7}{'@0.25':>7}"
             f"{'valid':>7}{'s p50':>8}{'s p95':>8}{'tok p50':>9}"]
    for name, m in result["configs"].items():
        if "skipped" in m:
            lines.append(f"{name:<14}skipped: {m['skipped']}")
            continue
        lines.append(f"{name:<14}{m['label_accuracy']:>7.3f}{m['macro_f1']:>9.3f}{m['q_only']:>8.3f}"
                     f"{m['q_plus_a']:>7.3f}{m['averitec_score']['0.25']:>7.3f}{m['valid_rate']:>7.2f}"
                     f"{m['seconds_per_claim']['p50']:>8.1f}{m['seconds_per_claim']['p95']:>8.1f}"
                     f"{m['tokens_per_claim']['p50']:>9.0f}")
    scored = [m for m in result["configs"].values() if "skipped" not in m]
    if scored:
        lines.append(f"majority-class macro-F1 on the same claims: {scored[0]['majority_macro_f1']:.3f}")
    return "\n".join(lines)
