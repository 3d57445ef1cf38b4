"""``factsieve decisions export``: the review decision log as training pairs (``plugin.review``)."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from plugin.service.keys import check_tenant
from plugin.service.services import Services

from cli.common import parse_date


def cmd_decisions_export(args: argparse.Namespace, services: Services) -> int:
    """One JSON object a line: ``{decision_id, post_id, post_text, post_lang, factcheck_id,
    label, rank, score, confidence, signals, versions, actor, at, origin}``."""
    since = parse_date(args.since, "--since")
    out = sys.stdout
    for pair in services.review.export(check_tenant(args.tenant), since.isoformat() if since else None):
        out.write(json.dumps(pair, ensure_ascii=False, default=str) + "\n")
    return 0


def register(sub: Any, add: Any) -> None:
    decisions = sub.add_parser("decisions", help="the review decision log").add_subparsers(
        dest="decisions_command", required=True, metavar="COMMAND")
    sp = add("export", cmd_decisions_export,
             "the tenant's review decisions as training pairs (post, fact-check, label), one JSON "
             "object a line; undone decisions are left out", decisions)
    sp.add_argument("--tenant", required=True, help="the newsroom whose decisions to export")
    sp.add_argument("--since", help="decisions made on or after this day (YYYY-MM-DD)")
    sp.add_argument("--format", default="jsonl", choices=["jsonl"], help="JSON Lines (the only one)")
