"""The ``factsieve`` command line.

``main()`` is the edge: it builds the settings once, dispatches to one function per subcommand
through a table, and turns FactSieve errors into a one-line message and the error's exit code
(never a traceback). Heavy parts (the model, the OpenSearch client) are built only by the
subcommands that need them, so ``factsieve --help`` is instant.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import BadInput, FactSieveError
from .settings import Settings

log = logging.getLogger("factsieve")


def _dump(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


# -- builders (the edge) -----------------------------------------------------------------------
def _store(settings: Settings):
    from .store import Store

    return Store(settings)


def _embedder(settings: Settings):
    from .embedding import load_embedder

    return load_embedder(settings)


def _spec(settings: Settings, embedder) -> Any:
    from .templates import IndexSpec

    return IndexSpec(alias=settings.index, model=embedder.name, dimension=embedder.dim,
                     replicas=settings.index_replicas)


def _parse_date(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadInput(f"--date must be YYYY-MM-DD, got {value!r}") from None


# -- subcommands --------------------------------------------------------------------------------
def cmd_init(args: argparse.Namespace, settings: Settings) -> int:
    from .templates import ensure_index, template_bodies

    store, embedder = _store(settings), _embedder(settings)
    spec = _spec(settings, embedder)
    index = ensure_index(store, spec)
    written = list(template_bodies(spec))
    _dump({"alias": spec.alias, "index": index, "embedding_model": spec.model,
           "embedding_dim": spec.dimension, "templates": written})
    return 0


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from .ingest import Format, ingest, read_records
    from .templates import ensure_index

    fmt = Format.parse(args.format)
    store, embedder = _store(settings), _embedder(settings)
    ensure_index(store, _spec(settings, embedder))
    bar = None
    if sys.stderr.isatty() and not args.quiet:
        from tqdm import tqdm

        bar = tqdm(unit="doc", desc="ingest", file=sys.stderr)
    try:
        report = ingest(read_records(args.paths, fmt), store=store, embedder=embedder,
                        index=settings.index, batch_size=args.batch_size or settings.embedding_batch_size,
                        seed=settings.langdetect_seed, progress=bar.update if bar else None)
    finally:
        if bar:
            bar.close()
    _dump(report.to_dict())
    return 0 if report.rejected == 0 or not args.strict else 1


def _matcher(settings: Settings):
    from .matcher import Matcher

    return Matcher(_store(settings), _embedder(settings), settings)


def _request(args: argparse.Namespace, text: str):
    from .matcher import MatchRequest
    from .models import Mode

    return MatchRequest(text=text, lang=args.lang, date=_parse_date(args.date),
                        mode=Mode.parse(args.mode), k=args.k, within_days=args.within_days,
                        allow=tuple(args.allow or ()), deny=tuple(args.deny or ()))


def _print_matches(result: Any, header: str | None = None) -> None:
    if header:
        print(header)
    print(f"  language: {result.lang or '?'}   ({result.took_ms:.0f} ms)")
    if not result.matches:
        print("  no matches")
    for m in result.matches:
        extra = ", ".join(x for x in (m.get("lang"), m.get("rating"), m.get("url")) if x)
        print(f"  {m['rank']:>2}. [{m['score']:.4f}] {m['claim']}" + (f"  ({extra})" if extra else ""))


def cmd_match(args: argparse.Namespace, settings: Settings) -> int:
    result = _matcher(settings).match(_request(args, args.text), args.config)
    if args.json:
        _dump(result.to_dict())
    else:
        _print_matches(result)
    return 0


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from .ingest import Format, ingest, read_records
    from .templates import ensure_index

    store, embedder = _store(settings), _embedder(settings)
    ensure_index(store, _spec(settings, embedder))
    files = [args.samples / "multiclaim" / "factchecks.jsonl", args.samples / "clef2020" / "factchecks.jsonl"]
    report = ingest(read_records(files, Format.jsonl), store=store, embedder=embedder,
                    index=settings.index, seed=settings.langdetect_seed)
    print(f"sample corpus: {report.indexed} new, {report.updated} updated, {report.rejected} rejected "
          f"(index alias {settings.index!r}, {store.count(settings.index)} fact-checks)")
    from .matcher import Matcher, MatchRequest

    matcher = Matcher(store, embedder, settings)
    posts = [json.loads(line) for line in (args.samples / "demo_posts.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    for post in posts:
        result = matcher.match(MatchRequest(text=post["text"], k=args.k))
        _print_matches(result, header=f"\n{post['note']}:\n  \"{' '.join(post['text'].split())}\"")
        found = [m["rank"] for m in result.matches if m["id"] in set(post.get("expect", []))]
        print(f"  known fact-check: {'found at rank ' + str(found[0]) if found else 'not in the top ' + str(args.k)}")
    return 0


def cmd_model_build(args: argparse.Namespace, settings: Settings) -> int:
    from .embedding import build_test_model
    from .settings import TEST_MODEL

    dest = settings.model_cache_dir / "multilingual-e5-small-rebuilt"
    path = build_test_model(dest, force=args.force)
    _dump({"model": TEST_MODEL, "path": str(path)})
    return 0


def cmd_model_info(args: argparse.Namespace, settings: Settings) -> int:
    embedder = _embedder(settings)
    _dump({"model": embedder.name, "dim": embedder.dim, "backend": type(embedder).__name__})
    return 0


def cmd_index_info(args: argparse.Namespace, settings: Settings) -> int:
    from .templates import index_model

    store = _store(settings)
    meta = index_model(store, settings.index)
    _dump({"alias": settings.index, **meta, "count": store.count(settings.index)})
    return 0


def cmd_index_new_version(args: argparse.Namespace, settings: Settings) -> int:
    from .templates import create_version

    store, embedder = _store(settings), _embedder(settings)
    name = create_version(store, _spec(settings, embedder), point_alias=args.switch)
    _dump({"alias": settings.index, "created": name, "alias_switched": bool(args.switch)})
    return 0


def cmd_index_switch(args: argparse.Namespace, settings: Settings) -> int:
    from .templates import switch_alias

    store = _store(settings)
    if not store.index_exists(args.target):
        raise BadInput(f"no index named {args.target!r}")
    switch_alias(store, settings.index, args.target)
    _dump({"alias": settings.index, "index": args.target})
    return 0


DEFAULT_DATASET = Path("../shared/data/clef2020_task2")


def _table(result: dict[str, Any]) -> str:
    cols = ["S@1", "S@5", "S@10", "MAP@5", "MRR@10", "R@100"]
    lines = [f"{result['dataset']}  ({result['n_queries']} queries, {result['n_factchecks']} fact-checks)",
             f"{'config':<16}{'mode':<7}" + "".join(f"{c:>8}" for c in cols) + f"{'p50 ms':>9}{'p95 ms':>9}"]
    for name, body in result["configs"].items():
        if "skipped" in body:
            lines.append(f"{name:<16}skipped: {body['skipped']}")
            continue
        per_mode = body if "S@10" not in body else {result["modes"][0]: body}
        for mode, m in per_mode.items():
            lines.append(f"{name:<16}{mode:<7}" + "".join(f"{m[c]:>8.3f}" for c in cols)
                         + f"{m['latency_ms']['p50']:>9.1f}{m['latency_ms']['p95']:>9.1f}")
    return "\n".join(lines)


def cmd_evaluate(args: argparse.Namespace, settings: Settings) -> int:
    from .evaluate.run import evaluate, load_dataset
    from .retrieval import load_configs

    dataset_path = args.dataset or DEFAULT_DATASET
    if not dataset_path.exists():
        raise BadInput(f"dataset folder {str(dataset_path)!r} not found: pass --dataset DIR "
                       "(factchecks.jsonl, queries.jsonl, qrels.jsonl)")
    dataset = load_dataset(dataset_path)
    configs = load_configs(args.configs_file)
    if args.config:
        wanted = [c.strip() for c in args.config.split(",") if c.strip()]
        unknown = [c for c in wanted if c not in configs]
        if unknown:
            raise BadInput(f"unknown configuration(s) {unknown}; known: {', '.join(configs)}")
        configs = {c: configs[c] for c in wanted}
    from .rerank import load_rerankers

    rerankers = load_rerankers(configs, settings)
    result = evaluate(_store(settings), _embedder(settings), settings, dataset, configs,
                      mode=args.mode, use_dates=args.dates, rerankers=rerankers, rebuild=args.rebuild)
    if args.record:
        from datetime import date

        from .retrieval import packaged_configs_path, write_scores

        write_scores(args.configs_file or packaged_configs_path(), result, on=date.today().isoformat())
    if args.table:
        print(_table(result))
    else:
        _dump(result)
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    from .bench import bench
    from .evaluate.run import load_dataset
    from .models import Mode
    from .retrieval import load_configs

    dataset_path = args.dataset or DEFAULT_DATASET
    if not dataset_path.exists():
        raise BadInput(f"dataset folder {str(dataset_path)!r} not found: pass --dataset DIR")
    configs = load_configs(args.configs_file)
    if args.config:
        configs = {c: configs[c] for c in args.config.split(",") if c in configs}
    sizes = [int(x) for x in args.docs.split(",")] if args.docs else []
    result = bench(_store(settings), _embedder(settings), settings, load_dataset(dataset_path), configs,
                   sizes=sizes, concurrency=args.concurrency, n_queries=args.queries,
                   seconds=args.seconds, mode=Mode.parse(args.mode))
    _dump(result)
    return 0


def cmd_train_reranker(args: argparse.Namespace, settings: Settings) -> int:
    from .train_reranker import train_reranker

    for flag, path in (("--dataset", args.dataset), ("--groups", args.groups),
                       ("--remote-weights", args.remote_weights)):
        if path is not None and not path.exists():
            raise BadInput(f"{flag} {str(path)!r} not found")
    _dump(train_reranker(settings, args.dataset, args.out, epochs=args.epochs, negatives=args.negatives,
                         pool=args.pool, max_length=args.max_length, batch_size=args.batch_size,
                         lr=args.lr, seed=args.seed, loss=args.loss, threads=args.threads,
                         train_layers=args.train_layers or None, first_stage=args.first_stage,
                         device=args.device, export_groups=args.export_groups,
                         groups_file=args.groups, pack=args.pack, remote_weights=args.remote_weights))
    return 0


def cmd_configs(args: argparse.Namespace, settings: Settings) -> int:
    from .retrieval import default_config_name, load_configs

    configs = load_configs(args.configs_file)
    _dump({"default": default_config_name(args.configs_file),
           "configs": {n: c.model_dump(mode="json", exclude={"name"}) for n, c in configs.items()}})
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    store = _store(settings)
    status: dict[str, Any] = {"opensearch_url": settings.opensearch_url, "opensearch": store.ping()}
    if status["opensearch"]:
        status["opensearch_version"] = store.info()["version"]["number"]
        status["plugins"] = sorted(store.plugins())
    _dump(status)
    return 0 if status["opensearch"] else 6


# -- HTTP API, workers, API keys -----------------------------------------------------------------
def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from api.server import serve

    serve(settings, host=args.host, port=args.port, workers=args.workers, threads=args.threads,
          timeout=args.timeout, access_log=args.access_log)
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from workers.app import QUEUES, create_celery

    queues = args.queues or ",".join(QUEUES)
    argv = ["worker", f"--queues={queues}", f"--loglevel={args.loglevel}",
            f"--concurrency={args.concurrency or settings.worker_concurrency}",
            f"--pool={args.pool}", "--without-gossip", "--without-mingle"]
    if args.hostname:
        argv.append(f"--hostname={args.hostname}")
    create_celery(settings).worker_main(argv)
    return 0


def _keys(settings: Settings):
    from .keys import KeyStore
    from .kv import KV

    return KeyStore(KV(settings), settings)


def cmd_keys_create(args: argparse.Namespace, settings: Settings) -> int:
    from .keys import Scope

    record, key = _keys(settings).create(args.name, Scope.parse(args.scope))
    _dump({"id": record.id, "key": key, "name": record.name, "scope": record.scope.value})
    return 0


def cmd_keys_list(args: argparse.Namespace, settings: Settings) -> int:
    _dump(_keys(settings).list())
    return 0


def cmd_keys_revoke(args: argparse.Namespace, settings: Settings) -> int:
    _keys(settings).revoke(args.id)
    _dump({"revoked": args.id})
    return 0


# -- parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="factsieve", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable[..., int], help_: str, parent=sub) -> argparse.ArgumentParser:
        sp = parent.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=fn)
        return sp

    add("init", cmd_init, "install index templates and create the fact-check index behind its alias")

    sp = add("ingest", cmd_ingest, "load fact-checks (JSON Lines, JSON, CSV, ClaimReview, MultiClaim)")
    sp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    sp.add_argument("--format", default="auto", help="auto|jsonl|json|csv|claimreview|multiclaim")
    sp.add_argument("--batch-size", type=int, default=None, help="embedding batch size")
    sp.add_argument("--strict", action="store_true", help="exit 1 when any record was rejected")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    def match_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--lang", help="language of the post (ISO 639-1); detected when omitted")
        sp.add_argument("--date", help="post date YYYY-MM-DD: only fact-checks published on or before it")
        sp.add_argument("--within-days", type=int, help="with --date: only fact-checks from this many days before")
        sp.add_argument("--mode", default="auto",
                        help="mono (same language only), cross (any language) or auto (any, own language preferred)")
        sp.add_argument("--config", help="named retrieval configuration (see `factsieve configs`)")
        sp.add_argument("-k", type=int, default=10, help="number of matches")
        sp.add_argument("--allow", action="append", help="only this domain/publisher (repeatable)")
        sp.add_argument("--deny", action="append", help="never this domain/publisher (repeatable)")

    sp = add("match", cmd_match, "find the fact-checks that address a post or claim")
    sp.add_argument("text")
    match_args(sp)
    sp.add_argument("--json", action="store_true", help="print JSON")

    sp = add("demo", cmd_demo, "load the bundled sample corpus and print matches for sample posts")
    sp.add_argument("--samples", type=Path, default=Path("samples"))
    sp.add_argument("-k", type=int, default=5)

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

    sp = add("evaluate", cmd_evaluate, "run named retrieval configurations over a dataset and print metrics")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration)")
    sp.add_argument("--configs-file", type=Path, help="a retrieval configuration file (default: the packaged one)")
    sp.add_argument("--mode", help="mono|cross|auto|both (default: both for datasets with crosslingual pairs, else mono)")
    sp.add_argument("--dates", action="store_true", help="only fact-checks published on or before each query's date")
    sp.add_argument("--rebuild", action="store_true", help="re-index the dataset even if an index exists")
    sp.add_argument("--record", action="store_true",
                    help="write the scores into the configuration file as each configuration's last_scores")
    sp.add_argument("--json", action="store_true", help="print JSON (the default)")
    sp.add_argument("--table", action="store_true", help="print a table instead of JSON")

    sp = add("bench", cmd_bench, "latency, throughput, ingest rate and memory per configuration and corpus size")
    sp.add_argument("--dataset", type=Path, help=f"dataset folder (default {DEFAULT_DATASET} when present)")
    sp.add_argument("--config", help="NAME[,NAME...] (default: every configuration without a reranker)")
    sp.add_argument("--configs-file", type=Path)
    sp.add_argument("--docs", help="scaled synthetic corpus sizes, e.g. 100000,1000000")
    sp.add_argument("--concurrency", type=int, default=2)
    sp.add_argument("--queries", type=int, default=200, help="queries for the latency run")
    sp.add_argument("--seconds", type=float, default=20.0, help="duration of the throughput run")
    sp.add_argument("--mode", default="auto")
    sp.add_argument("--json", action="store_true", help="print JSON (the default)")

    sp = add("train-reranker", cmd_train_reranker,
             "fine-tune a cross-encoder reranker on a dataset's training queries (needs factsieve[train])")
    sp.add_argument("--dataset", type=Path, help="dataset folder (queries with split == train are used)")
    sp.add_argument("--out", help="NAME (under the model cache's rerankers/) or a folder")
    sp.add_argument("--first-stage", default="factsieve",
                    help="configuration the hard negatives are mined from (the one the reranker sits behind)")
    sp.add_argument("--epochs", type=int, default=4)
    sp.add_argument("--negatives", type=int, default=7, help="hard negatives per positive per step")
    sp.add_argument("--pool", type=int, default=30, help="negatives are sampled from the first stage's top N")
    sp.add_argument("--max-length", type=int, default=160, help="tokens per (query, passage) pair")
    sp.add_argument("--batch-size", type=int, default=16, help="pairs per step (whole groups)")
    sp.add_argument("--lr", type=float, default=3e-5)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--loss", default="listwise", help="listwise (softmax over each group) or bce")
    sp.add_argument("--threads", type=int, help="torch CPU threads (default: the CPUs this process may use)")
    sp.add_argument("--device", default="auto", help="auto (CUDA when torch sees one), cpu or cuda")
    sp.add_argument("--train-layers", type=int, default=4,
                    help="fine-tune only the top N encoder layers (0: all); the pooler and classifier always")
    sp.add_argument("--export-groups", type=Path, metavar="FILE",
                    help="mine the training groups into FILE and stop (no torch needed)")
    sp.add_argument("--groups", type=Path, metavar="FILE", help="train from groups written by --export-groups")
    sp.add_argument("--pack", type=Path, metavar="FILE",
                    help="write a torch-only training bundle for an accelerator box and stop "
                         "(scripts/train_reranker_remote.py trains it)")
    sp.add_argument("--remote-weights", type=Path, metavar="DIR",
                    help="finish the model from weights trained from a --pack bundle")

    sp = add("configs", cmd_configs, "list the named retrieval configurations with their last scores")
    sp.add_argument("--configs-file", type=Path)

    add("status", cmd_status, "check that OpenSearch is reachable and list its plugins")

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
    sp.add_argument("--scope", default="write", help="read (GET, match, verify, rerank) or write (everything)")
    add("list", cmd_keys_list, "list API keys (ids and names, never the keys)", keys)
    sp = add("revoke", cmd_keys_revoke, "revoke an API key by id", keys)
    sp.add_argument("id")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        try:
            settings = Settings()
        except ValidationError as exc:
            raise BadInput(f"invalid FACTSIEVE_* setting: {exc.errors()[0]['loc'][0]}: "
                           f"{exc.errors()[0]['msg']}") from None
        return args.func(args, settings)
    except FactSieveError as exc:
        print(f"factsieve: {exc.title.lower()}: {exc.detail}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("factsieve: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
