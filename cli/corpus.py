"""Commands that build and inspect the fact-check corpus: templates, ingestion, the versioned
index behind its alias, the embedding model, cluster status."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.service.services import Services

from cli.common import add_tenant_flag, dump, writer_of


def cmd_init(args: argparse.Namespace, services: Services) -> int:
    dump(services.admin().deployment.install())
    return 0


def cmd_ingest(args: argparse.Namespace, services: Services) -> int:
    from plugin.ingest import Format, read_records

    fmt = Format.parse(args.format)
    services.factchecks.ensure()
    bar = None
    if sys.stderr.isatty() and not args.quiet:
        from tqdm import tqdm

        bar = tqdm(unit="doc", desc="ingest", file=sys.stderr)
    try:
        report = services.factchecks.ingest(read_records(args.paths, fmt), batch_size=args.batch_size,
                                            progress=bar.update if bar else None,
                                            writer=writer_of(args), local_files=True)
    finally:
        if bar:
            bar.close()
    dump(report.to_dict())
    return 0 if report.rejected == 0 or not args.strict else 1


def cmd_model_build(args: argparse.Namespace, services: Services) -> int:
    from plugin.build.models import build_models

    dump(build_models(services.settings, force=args.force))
    return 0


def cmd_model_info(args: argparse.Namespace, services: Services) -> int:
    embedder = services.embedder
    dump({"model": embedder.name, "dim": embedder.dim, "backend": type(embedder).__name__})
    return 0


def cmd_index_info(args: argparse.Namespace, services: Services) -> int:
    from plugin.index.templates import index_model

    alias = services.settings.index
    dump({"alias": alias, **index_model(services.store, alias), "count": services.store.count(alias)})
    return 0


def cmd_index_new_version(args: argparse.Namespace, services: Services) -> int:
    from plugin.index.templates import create_version

    services = services.admin()  # index versions and alias switches: the admin identity
    name = create_version(services.store, services.factchecks.spec(), point_alias=args.switch)
    out: dict[str, Any] = {"alias": services.settings.index, "created": name,
                           "alias_switched": bool(args.switch)}
    if args.switch:  # the alias's index gets the embedding pipeline, _meta and template
        out["hosted_model"] = services.admin().deployment.host_model()
    dump(out)
    return 0


def cmd_index_switch(args: argparse.Namespace, services: Services) -> int:
    from plugin.index.templates import switch_alias

    services = services.admin()
    if not services.store.index_exists(args.target):
        raise BadInput(f"no index named {args.target!r}")
    switch_alias(services.store, services.settings.index, args.target)
    # the index behind the alias now is the one whose writes the hosted model must embed
    dump({"alias": services.settings.index, "index": args.target,
          "hosted_model": services.admin().deployment.host_model()})
    return 0


def cmd_status(args: argparse.Namespace, services: Services) -> int:
    store = services.store
    status: dict[str, Any] = {"opensearch_url": store.url, "opensearch": store.ping()}
    if status["opensearch"]:
        status["opensearch_version"] = store.info()["version"]["number"]
        status["plugins"] = sorted(store.plugins())
    dump(status)
    return 0 if status["opensearch"] else 6


def register(sub: Any, add: Any) -> None:
    add("init", cmd_init, "install index templates and create the fact-check index behind its alias")

    sp = add("ingest", cmd_ingest, "load fact-checks (JSON Lines, JSON, CSV, ClaimReview, MultiClaim); "
             "their images too (image_base64, image_url, or image_path relative to the file)")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    sp.add_argument("--format", default="auto", help="auto|jsonl|json|csv|claimreview|multiclaim")
    sp.add_argument("--batch-size", type=int, default=None, help="embedding batch size")
    sp.add_argument("--strict", action="store_true", help="exit 1 when any record was rejected")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_tenant_flag(sp)

    model = sub.add_parser("model", help="embedding model commands").add_subparsers(
        dest="model_command", required=True, metavar="COMMAND")
    sp = add("build", cmd_model_build, "build the packaged test model (multilingual-e5-small) once", model)
    sp.add_argument("--force", action="store_true")
    add("info", cmd_model_info, "load the configured embedding model and print its name and dimension", model)

    index = sub.add_parser("index", help="versioned index commands").add_subparsers(
        dest="index_command", required=True, metavar="COMMAND")
    add("info", cmd_index_info, "show the index behind the alias and the model it was built with", index)
    sp = add("new-version", cmd_index_new_version,
             "create the next versioned index for the configured model", index)
    sp.add_argument("--switch", action="store_true", help="point the alias at it now")
    sp = add("switch", cmd_index_switch, "point the alias at another versioned index", index)
    sp.add_argument("target")

    add("status", cmd_status, "check that OpenSearch is reachable and list its plugins")
