"""The simulated desk: what FactSieve's learning does to matching, measured on a labelled dataset.

``simulate`` replays the queries of one split (``decide``) through the queue as posts (the post
job's own code, ``plugin.service.handlers.run_post``: match, learning, review item, memory), and
an ``Oracle`` reviewer decides each item from the qrels. After each batch the slower speeds of
learning run (``Speeds``: today the tenant's recalibration; the reranker update when one is
given), then the other split (``eval``) is matched as the tenant sees it and scored: MAP@5, S@1,
S@10, ECE of the top match's confidence, and the auto-confirm tier's precision and coverage on
it. ``before`` is the same evaluation before any decision.

Everything runs under its own tenant and its own review, decision and learning indexes
(``sim_settings``), deleted afterwards unless kept: a simulation never changes a real tenant.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from plugin.errors import BadInput, FactSieveError
from plugin.lab.evaluate.metrics import evaluate_run
from plugin.review.records import ReviewCandidate, ReviewStatus
from plugin.search.calibration import expected_calibration_error
from plugin.search.request import MatchRequest
from plugin.settings import POST_INDEXES, Settings
from plugin.service.matching import Occasion, config_for, match_post

#: the items a reviewer sees per post (the desk's keys confirm candidates 1 to 5)
SHOWN = 5
#: metrics reported after each batch
METRICS = ("MAP@5", "S@1", "S@10")
#: the settings fields that name a per-deployment index the simulation must not share
_OWN_INDEXES = (*POST_INDEXES, "learned_index", "jobs_index")


@dataclass(frozen=True)
class Oracle:
    """A reviewer who knows the qrels: confirms the relevant fact-check when it is among the
    shown candidates (the best-ranked one when several are), else answers ``none`` (none of
    those shown is right; ``training_pairs`` then makes every shown candidate a negative)."""

    qrels: Mapping[str, Set[str]]
    shown: int = SHOWN

    def decide(self, query_id: str, post_id: str, candidates: Sequence[ReviewCandidate]) -> dict[str, Any]:
        relevant = self.qrels.get(query_id, set())
        hit = next((c.factcheck_id for c in candidates[: self.shown] if c.factcheck_id in relevant), None)
        if hit is not None:
            return {"post_id": post_id, "action": "confirm", "factcheck_id": hit}
        return {"post_id": post_id, "action": "none"}


@dataclass
class Speeds:
    """The slower speeds of learning, each ``tenant → report`` (a ``BadInput`` is a refusal,
    reported as such: too few or one-sided decisions). ``None``: not run."""

    recalibrate: Callable[[str], dict[str, Any]] | None = None
    reranker: Callable[[str], dict[str, Any]] | None = None
    #: the tenant's auto-confirm threshold after the last recalibration, read back
    tier: Callable[[str], float | None] = field(default=lambda tenant: None)


def sim_settings(settings: Settings, tag: str, factcheck_index: str) -> Settings:
    """``settings`` with the dataset's fact-check index and the simulation's own other indexes."""
    update: dict[str, Any] = {"index": factcheck_index, "redis_prefix": f"{settings.redis_prefix}-sim-{tag}"}
    for name in _OWN_INDEXES:
        if name in Settings.model_fields:
            update[name] = f"sim-{tag}-{getattr(settings, name)}"
    return settings.model_copy(update=update)


def own_indexes(settings: Settings) -> list[str]:
    """The aliases ``sim_settings`` gave the simulation (to delete afterwards)."""
    return [getattr(settings, n) for n in _OWN_INDEXES if n in Settings.model_fields]


def drop_simulation(sim: Any) -> None:
    """Delete what a simulation's ``Services`` (``sim_settings``) wrote: its own indexes and its
    Redis namespace (never the dataset's fact-check index, which it shares)."""
    for name in own_indexes(sim.settings):
        sim.store.delete_index(f"{name}-v*")
    sim.kv.delete_namespace()


def batch_bounds(batches: Sequence[int], available: int) -> list[int]:
    """Cumulative decision counts to stop at, capped at what the split holds (pure)."""
    if not batches or any(b <= 0 for b in batches) or list(batches) != sorted(set(batches)):
        raise BadInput("--batches: increasing positive counts, such as 100,300,1000")
    out = sorted({min(b, available) for b in batches})
    return [b for b in out if b > 0]


def score(run: Mapping[str, list[dict[str, Any]]], qrels: Mapping[str, Set[str]],
          threshold: float | None) -> dict[str, Any]:
    """Metrics of matched queries (``query id → matches``, best first), the ECE of the top
    match's confidence against whether it is relevant, and the auto tier at ``threshold``:
    precision of the top matches at or above it and the share of queries they cover (pure)."""
    ranked = {q: [m["id"] for m in ms] for q, ms in run.items()}
    out: dict[str, Any] = {k: round(v, 4) for k, v in evaluate_run(ranked, qrels, METRICS).items()}
    tops = [(ms[0].get("confidence"), ms[0]["id"] in qrels.get(q, set()))
            for q, ms in run.items() if ms and ms[0].get("confidence") is not None]
    out["ECE@1"] = round(expected_calibration_error([c for c, _ in tops], [float(y) for _, y in tops]), 4) \
        if tops else None
    tier: dict[str, Any] = {"threshold": threshold, "precision": None, "coverage": 0.0}
    if threshold is not None and run:
        above = [y for c, y in tops if c >= threshold]
        tier["precision"] = round(sum(above) / len(above), 4) if above else None
        tier["coverage"] = round(len(above) / len(run), 4)
    out["auto_tier"] = tier
    return out


def _queries(dataset: Any, split: str) -> list[dict[str, Any]]:
    qrels = dataset.qrels["all"]
    found = [q for q in dataset.queries if q.get("split") == split and str(q["id"]) in qrels]
    if not found:
        splits = sorted({str(q.get("split")) for q in dataset.queries})
        raise BadInput(f"split {split!r} has no labelled query in {dataset.name}; splits: {', '.join(splits)}")
    return found


def simulate(services: Any, dataset: Any, *, decide_split: str, eval_split: str,
             batches: Sequence[int], speeds: Speeds, tenant: str | None = None,
             config: str | None = None) -> dict[str, Any]:
    """Run the simulated desk (see the module docstring); returns the report as JSON data."""
    from plugin.service.handlers import run_post

    qrels = dataset.qrels["all"]
    deciding, evaluating = _queries(dataset, decide_split), _queries(dataset, eval_split)
    bounds = batch_bounds(batches, len(deciding))
    tenant = tenant or f"sim-{uuid.uuid4().hex[:8]}"
    oracle = Oracle(qrels)
    config_name = services.config(config_for(services.settings, services.matching.configs, config,
                                             Occasion.JOB)).name
    # scored over the eval split alone (a query of another split would count as a miss)
    eval_qrels = {str(q["id"]): qrels[str(q["id"])] for q in evaluating}

    def evaluate() -> dict[str, Any]:
        """The eval split as the post job answers the tenant (the one match path): reranked
        where the configuration reranks (by the tenant's champion once it has one), then
        learning."""
        started = time.perf_counter()
        run = {}
        for q in evaluating:
            post = {"text": q["text"], "lang": q.get("lang"), "k": 10}
            found = match_post(services.matching, MatchRequest.from_mapping(post), tenant, config=config,
                               occasion=Occasion.JOB, post=post)
            run[str(q["id"])] = found.to_dict()["matches"]
        return {**score(run, eval_qrels, speeds.tier(tenant)), "eval_seconds": round(time.perf_counter() - started, 1)}

    report: dict[str, Any] = {"dataset": dataset.name, "tenant": tenant, "decide_split": decide_split,
                              "eval_split": eval_split, "config": config_name,
                              "decide_queries": len(deciding), "eval_queries": len(evaluating),
                              "before": evaluate(), "batches": []}
    done, actions = 0, {"confirm": 0, "none": 0}
    for bound in bounds:
        started = time.perf_counter()
        for q in deciding[done:bound]:
            # by the dataset's query id alone, so the recalibration's held-out share (a hash of the
            # post id) is the same in every run; the tenant's indexes are the simulation's own
            post_id = f"{dataset.name}-{q['id']}"
            post = {"id": post_id, "text": q["text"], "lang": q.get("lang")}
            if q.get("date"):
                post["date"] = q["date"]
            run_post(services, {"id": f"job-{post_id}", "tenant": tenant,
                                "input": {"post": post, "config": config_name}}, lambda delivery_id: None)
            item = services.review.item(tenant, post_id)
            if item.status is not ReviewStatus.PENDING:  # decided already (auto-confirmed): the oracle leaves it
                continue
            decision = oracle.decide(str(q["id"]), post_id, item.candidates)
            services.review.decide(tenant, "oracle", [{**decision, "version": item.version}], origin="desk")
            actions[decision["action"]] += 1
        done = bound
        decided_s = time.perf_counter() - started
        batch: dict[str, Any] = {"decisions": done, "actions": dict(actions),
                                 "decide_seconds": round(decided_s, 1)}
        for name in ("recalibrate", "reranker"):
            speed = getattr(speeds, name)
            if speed is None:
                batch[name] = None
                continue
            t0 = time.perf_counter()
            try:
                batch[name] = {**speed(tenant), "seconds": round(time.perf_counter() - t0, 1)}
            except FactSieveError as exc:
                batch[name] = {"refused": str(exc), "seconds": round(time.perf_counter() - t0, 1)}
        batch.update(evaluate())
        batch["seconds"] = round(time.perf_counter() - started, 1)
        report["batches"].append(batch)
    return report
