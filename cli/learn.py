"""``factsieve learn``: what FactSieve learns from the desk's decisions (``plugin.learn``)."""
from __future__ import annotations

import argparse
from typing import Any

from plugin.errors import BadInput
from plugin.service.keys import check_tenant
from plugin.service.services import Services

from cli.common import dump

#: what ``learn calibrate`` prints of a stored recalibration
SUMMARY = ("tenant", "decisions", "per_language", "ece_before", "ece_after", "ece_at_1_before",
           "ece_at_1_after", "tier", "calibrator", "fitted_at", "stored")


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
        s = summary(refit(services, check_tenant(args.tenant), store=store))
        dump(s) if args.json else print(_line(s))
        return 0
    results = []
    for tenant, _ in due_tenants(services, 1):
        try:
            results.append(summary(refit(services, tenant, store=store)))
        except BadInput as exc:
            results.append({"tenant": tenant, "refused": exc.detail})
    if args.json:
        dump({"tenants": results})
    else:
        for s in results:
            print(f"{s['tenant']}: refused: {s['refused']}" if "refused" in s else _line(s))
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
