"""Commands that run and administer the service: the HTTP API, the workers, API keys."""
from __future__ import annotations

import argparse
from typing import Any

from plugin.service.services import Services

from cli.common import dump


def cmd_serve(args: argparse.Namespace, services: Services) -> int:
    from api.server import serve

    serve(services.settings, host=args.host, port=args.port, workers=args.workers, threads=args.threads,
          timeout=args.timeout, access_log=args.access_log)
    return 0


def cmd_worker(args: argparse.Namespace, services: Services) -> int:
    from workers.app import create_celery
    from workers.names import QUEUES
    from workers.recalibrator import start_recalibrator
    from workers.roller import start_roller
    from workers.sweeper import start_sweeper

    queues = args.queues or ",".join(QUEUES)
    argv = ["worker", f"--queues={queues}", f"--loglevel={args.loglevel}",
            f"--concurrency={args.concurrency or services.settings.worker_concurrency}",
            f"--pool={args.pool}", "--without-gossip", "--without-mingle"]
    if args.hostname:
        argv.append(f"--hostname={args.hostname}")
    app = create_celery(services.settings)
    from celery.signals import worker_ready

    @worker_ready.connect(weak=False)
    def _sweep(**_: object) -> None:  # in the worker's main process, once it consumes
        start_sweeper(app, services.settings.job_sweep_interval_s)
        start_recalibrator(app, services.settings.learn_calibrate_every_s)
        start_roller(app, services.settings.posts_roll_every_s)

    app.worker_main(argv)
    return 0


def cmd_keys_create(args: argparse.Namespace, services: Services) -> int:
    from plugin.service.keys import Scope

    record, key = services.keys.create(args.name, Scope.parse(args.scope), args.tenant)
    dump({"id": record.id, "key": key, "tenant": record.tenant, "scope": record.scope.value,
          "name": record.name})
    return 0


def cmd_keys_list(args: argparse.Namespace, services: Services) -> int:
    dump(services.keys.list())
    return 0


def cmd_keys_revoke(args: argparse.Namespace, services: Services) -> int:
    services.keys.revoke(args.id)
    dump({"revoked": args.id})
    return 0


def cmd_posts_roll(args: argparse.Namespace, services: Services) -> int:
    from datetime import datetime, timezone

    from plugin.errors import BadInput
    from plugin.index.rolling import roll

    now = datetime.now(timezone.utc)
    if args.now:
        try:
            now = datetime.fromisoformat(args.now)
        except ValueError:
            raise BadInput(f"--now {args.now[:40]!r} is not an ISO 8601 time") from None
        now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    if args.retention_days is not None and args.retention_days < 0:
        raise BadInput("--retention-days must be 0 (keep all) or more")
    s = services.settings
    dump(roll(services.admin().store, s.posts_index, now_ms=int(now.timestamp() * 1000),
              retention_days=s.posts_retention_days if args.retention_days is None else args.retention_days))
    return 0


def register(sub: Any, add: Any) -> None:
    sp = add("serve", cmd_serve, "run the HTTP API under gunicorn")
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=8000)
    sp.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    sp.add_argument("--threads", type=int, default=1, help="threads per worker (gthread when > 1)")
    sp.add_argument("--timeout", type=int, default=60, help="seconds before a stuck worker is restarted")
    sp.add_argument("--access-log", action="store_true", help="log every request to stderr")

    sp = add("worker", cmd_worker, "run a Celery worker for the job queues")
    sp.add_argument("--queues", help="comma-separated (default: match,rerank,verify,ingest,webhooks)")
    sp.add_argument("--concurrency", type=int, help="processes (default FACTSIEVE_WORKER_CONCURRENCY)")
    sp.add_argument("--pool", default="prefork", choices=["prefork", "solo", "threads"],
                    help="prefork enforces time limits; solo is one process, for tests")
    sp.add_argument("--loglevel", default="INFO")
    sp.add_argument("--hostname", help="Celery node name, e.g. w1@%%h")

    keys = sub.add_parser("keys", help="API keys").add_subparsers(
        dest="keys_command", required=True, metavar="COMMAND")
    sp = add("create", cmd_keys_create, "create an API key and print it once (stored hashed)", keys)
    sp.add_argument("--name", required=True, help="who or what uses the key")
    sp.add_argument("--scope", default="read", choices=["read", "write", "admin"],
                    help="read (GET, match, verify, rerank), write (also posts, webhooks, the shared "
                         "fact-checks) or admin (also every tenant's records)")
    sp.add_argument("--tenant", default="default",
                    help="the newsroom the key acts for: its jobs, posts and webhooks are its own, "
                         "and so are the fact-checks and evidence it ingests")
    add("list", cmd_keys_list, "list API keys (ids and names, never the keys)", keys)
    sp = add("revoke", cmd_keys_revoke, "revoke an API key by id", keys)
    sp.add_argument("id")

    posts = sub.add_parser("posts", help="the posts index").add_subparsers(
        dest="posts_command", required=True, metavar="COMMAND")
    sp = add("roll", cmd_posts_roll, "roll the posts alias over to a new index when a new month began, and "
             "delete the indexes older than the retention (what each worker does hourly; nothing where "
             "OpenSearch's Index State Management runs the policy); JSON", posts)
    sp.add_argument("--now", metavar="ISO", help="the time to judge by (default: now)")
    sp.add_argument("--retention-days", type=int, metavar="N",
                    help="days an index is kept after it stopped taking posts (default "
                         "FACTSIEVE_POSTS_RETENTION_DAYS; 0 keeps all)")
