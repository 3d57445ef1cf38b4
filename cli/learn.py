"""``factsieve learn``: what FactSieve learns from the desk's decisions (``plugin.learn``)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugin.errors import BadInput
from plugin.service.keys import check_tenant
from plugin.service.services import Services

from cli.common import dump

if TYPE_CHECKING:
    from plugin.learn.reranker_train import RerankerParts

#: what ``learn calibrate`` prints of a stored recalibration
SUMMARY = ("tenant", "decisions", "per_language", "ece_before", "ece_after", "ece_at_1_before",
           "ece_at_1_after", "tier", "calibrator", "fitted_at", "stored")


def reranker_parts(services: Services) -> RerankerParts:
    """The parts a reranker update uses (``plugin.learn.reranker_train``), from ``services``."""
    from plugin.learn.reranker_train import RerankerParts

    return RerankerParts(desk=services.review, store=services.store, embedder=services.embedder,
                         champions=services.champions, settings=services.settings, config=services.config)


def summary(record: dict[str, Any]) -> dict[str, Any]:
    tier = record["tier"]
    out = {**record, "decisions": record["counts"]["decisions"],
           "tier": {k: tier[k] for k in ("threshold", "precision", "coverage", "items", "reason")}}
    return {k: out[k] for k in SUMMARY} | {"counts": record["counts"]}


def _line(s: dict[str, Any]) -> str:
    tier = s["tier"]
    said = (f"auto-confirm tier {tier['threshold']} (precision {tier['precision']}, coverage "
            f"{tier['coverage']})" if tier["threshold"] is not None else f"no auto-confirm tier: {tier['reason']}")
    return (f"{s['tenant']}: {s['decisions']} decisions, held-out ECE {s['ece_before']} -> "
            f"{s['ece_after']}; {said}{'' if s['stored'] else ' (not stored)'}")


def cmd_learn_calibrate(args: argparse.Namespace, services: Services) -> int:
    """One tenant: its summary, or its refusal as a message and exit 2. Every tenant with
    decisions (no ``--tenant``): ``{"tenants": [...]}``, a refused one with its ``refused`` reason."""
    from plugin.learn.calibration_store import due_tenants, refit

    store = not args.dry_run
    if args.tenant:
        s = summary(refit(services.review, services.recalibrations, check_tenant(args.tenant), store=store))
        dump(s) if args.json else print(_line(s))
        return 0
    results = []
    for tenant, _ in due_tenants(services.review, services.recalibrations, 1):
        try:
            results.append(summary(refit(services.review, services.recalibrations, tenant, store=store)))
        except BadInput as exc:
            results.append({"tenant": tenant, "refused": exc.detail})
    if args.json:
        dump({"tenants": results})
    else:
        for s in results:
            print(f"{s['tenant']}: refused: {s['refused']}" if "refused" in s else _line(s))
    return 0


def _reranker_line(r: dict[str, Any]) -> str:
    said = "promoted" if r["promoted"] else "not promoted"
    return (f"{r['tenant']}: challenger {r['version']} {said}: {r['reason']} (held-out + dev "
            f"MAP@5 {r['champion']['MAP@5']} -> {r['challenger']['MAP@5']}; "
            f"{r['groups']['train']} decided posts + {r['groups']['replay']} replayed; "
            f"{r['seconds']['total']} s)")


def cmd_learn_reranker(args: argparse.Namespace, services: Services) -> int:
    """Fine-tune the tenant's challenger reranker from the packaged adapter and promote it past
    the gate (``plugin.learn.reranker_train``); a refusal is a message and exit 2."""
    from pathlib import Path

    from plugin.learn.reranker_train import REFERENCE_DATASET, LearnOptions, learn_reranker

    options = LearnOptions(epochs=args.epochs, flip_labels=args.flip_labels, device=args.device,
                           reference=Path(args.reference or REFERENCE_DATASET),
                           **({"config": args.config} if args.config else {}))
    report = learn_reranker(reranker_parts(services), check_tenant(args.tenant), options)
    dump(report) if args.json else print(_reranker_line(report))
    return 0


def cmd_learn_rollback(args: argparse.Namespace, services: Services) -> int:
    """The tenant's previous champion reranker serves again (the packaged one when that was it)."""
    result = services.champions.rollback(check_tenant(args.tenant))
    dump(result) if args.json else print(
        f"{result['tenant']}: {result['rolled_back']} rolled back; {result['serving']} serves")
    return 0


def _batches(value: str) -> list[int]:
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise BadInput(f"--batches: comma-separated counts such as 100,300,1000, got {value!r}") from None


def cmd_learn_simulate(args: argparse.Namespace, services: Services) -> int:
    """The simulated desk (``plugin.lab.simulate``) on a dataset: its own tenant and indexes
    beside the dataset's evaluation index, deleted afterwards unless ``--keep``."""
    import uuid

    from plugin.learn.train.datasets import ensure_dataset_index, load_dataset
    from plugin.lab.simulate import Speeds, drop_simulation, sim_settings, simulate
    from plugin.learn.calibration_store import refit

    dataset = load_dataset(args.dataset)
    batches = _batches(args.batches)
    alias, built = ensure_dataset_index(services.store, services.embedder, dataset, services.settings)
    tag = uuid.uuid4().hex[:8]
    sim = Services(sim_settings(services.settings, tag, alias), store=services.store,
                   embedder=services.embedder)

    def recalibrate(tenant: str) -> dict[str, Any]:
        s = summary(refit(sim.review, sim.recalibrations, tenant))
        return {k: s[k] for k in ("ece_before", "ece_after", "ece_at_1_before", "ece_at_1_after", "tier")}

    def tier(tenant: str) -> float | None:
        return ((sim.recalibrations.get(tenant) or {}).get("tier") or {}).get("threshold")

    def reranker(tenant: str) -> dict[str, Any]:
        from plugin.learn.reranker_train import LearnOptions, learn_reranker

        r = learn_reranker(reranker_parts(sim), tenant, LearnOptions(epochs=args.reranker_epochs))
        return {"promoted": r["promoted"], "champion": r["champion"]["MAP@5"],
                "challenger": r["challenger"]["MAP@5"], "reason": r["reason"], "seconds": r["seconds"]}

    speeds = Speeds(recalibrate=None if args.no_recalibrate else recalibrate, tier=tier,
                    reranker=reranker if args.reranker else None)
    try:
        report = simulate(sim, dataset, decide_split=args.decide_split, eval_split=args.eval_split,
                          batches=batches, speeds=speeds, tenant=f"sim-{tag}", config=args.config)
    finally:
        if not args.keep:
            drop_simulation(sim)
    report["index"] = {"alias": alias, "built": built}
    report["kept"] = bool(args.keep)
    dump(report)
    return 0


def cmd_learn_simulate_claims(args: argparse.Namespace, services: Services) -> int:
    """A simulated day of claims (``plugin.lab.simulate_claims``) under its own tenant and
    indexes beside the dataset's evaluation index, deleted afterwards unless ``--keep``."""
    import uuid

    from plugin.lab.simulate import drop_simulation, sim_settings
    from plugin.lab.simulate_claims import simulate_claims
    from plugin.learn.train.datasets import ensure_dataset_index, load_dataset
    from plugin.params import parse_int

    dataset = load_dataset(args.dataset)
    alias, built = ensure_dataset_index(services.store, services.embedder, dataset, services.settings)
    sim = Services(sim_settings(services.settings, uuid.uuid4().hex[:8], alias), store=services.store,
                   embedder=services.embedder)
    try:
        report = simulate_claims(sim, dataset, splits=args.split.split(",") if args.split else None,
                                 reposts=parse_int("--reposts", args.reposts, lo=0, hi=20), seed=args.seed,
                                 config=args.config)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    finally:
        if not args.keep:
            drop_simulation(sim)
    report["index"] = {"alias": alias, "built": built}
    dump(report)
    return 0


def register(sub: Any, add: Any) -> None:
    learn = sub.add_parser("learn", help="learn from the desk's decisions").add_subparsers(
        dest="learn_command", required=True, metavar="COMMAND")
    sp = add("calibrate", cmd_learn_calibrate,
             "refit a tenant's match confidence on its review decisions (shrunk toward the "
             "packaged model when they are few), report held-out ECE before and after and the "
             "auto-confirm tier, and serve it to the tenant's matches", learn)
    sp.add_argument("--tenant", help="the newsroom to recalibrate (default: every tenant with new "
                                     "decisions since its last fit)")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp.add_argument("--dry-run", action="store_true", help="fit and report, but store nothing")

    sp = add("reranker", cmd_learn_reranker,
             "fine-tune the tenant's LoRA reranker from the packaged adapter on its decisions plus a "
             "replay, and serve it only if it beats the champion on held-out MAP@5", learn)
    sp.add_argument("--tenant", required=True, help="the newsroom whose decisions train it")
    sp.add_argument("--epochs", type=int, default=1, help="passes over the training groups (1)")
    sp.add_argument("--config", help="the reranking configuration (default: hybrid-rerank)")
    sp.add_argument("--reference", help="the reference dataset: train queries replayed, dev "
                                        "queries scored by the gate (default: samples/clef2020)")
    sp.add_argument("--flip-labels", action="store_true",
                    help="train on flipped labels: a worse model on purpose, to check the gate")
    sp.add_argument("--device", default="cpu", choices=("cpu", "auto"),
                    help="where JAX trains: cpu (default), or auto for the accelerator JAX finds "
                         "(install the CUDA build of jax on a GPU machine)")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = add("rollback", cmd_learn_rollback,
             "serve the tenant's previous champion reranker again", learn)
    sp.add_argument("--tenant", required=True, help="the newsroom")
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = add("simulate-claims", cmd_learn_simulate_claims,
             "a simulated day of claims: a dataset's posts and their re-posts through the post job, one "
             "decision per claim by an oracle desk; posts, claims, decisions with and without claims, the "
             "share answered without a person (JSON)", learn)
    sp.add_argument("--dataset", type=Path, required=True, help="folder with factchecks.jsonl, queries.jsonl, qrels.jsonl")
    sp.add_argument("--split", help="SPLIT[,SPLIT...] of the queries to post (default all)")
    sp.add_argument("--reposts", default="2", help="re-posts of each query, with small edits (default 2)")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--config", help="the retrieval configuration of the post jobs (default the served one)")
    sp.add_argument("--keep", action="store_true", help="keep the simulation's indexes")

    sp = add("simulate", cmd_learn_simulate,
             "replay one split of a labelled dataset through the queue with an oracle reviewer, run "
             "the slower speeds of learning after each batch, and score the other split (JSON)", learn)
    sp.add_argument("--dataset", required=True, help="folder with factchecks.jsonl, queries.jsonl, qrels.jsonl")
    sp.add_argument("--decide-split", required=True, help="the split the oracle decides (e.g. dev)")
    sp.add_argument("--eval-split", required=True, help="the split scored after each batch (e.g. test)")
    sp.add_argument("--batches", default="100,300,1000",
                    help="cumulative decision counts to stop and score at (capped at the split's size)")
    sp.add_argument("--config", help="retrieval configuration (default: the settings' one)")
    sp.add_argument("--no-recalibrate", action="store_true", help="memory only: do not refit the confidence")
    sp.add_argument("--reranker", action="store_true",
                    help="also run the reranker update after each batch (slow on a CPU)")
    sp.add_argument("--reranker-epochs", type=int, default=1, help="its epochs (1)")
    sp.add_argument("--keep", action="store_true", help="keep the simulation's review, decision and posts indexes")
