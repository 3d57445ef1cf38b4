"""What ``factsieve learn reranker`` costs on the CPU for synthetic decision logs; prints JSON.

In a private namespace of the configured OpenSearch and Redis: the reference dataset's
fact-checks (``samples/clef2020``) are indexed as the fact-check index, and for each size in
``--sizes`` a tenant gets that many decided posts over its queries (``plugin.learn.
reranker_synthetic``) recorded through the desk; the command then runs as a subprocess (its CPU
time, the interpreter, imports, JAX compilation and the ONNX build when promoted included) and
its JSON report is kept. The namespace (and the tenants' model folders) are deleted afterwards.

    PYTHONPATH=. python scripts/reranker_bench.py [--sizes 300,1000] [--epochs 1]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from plugin.ingest import Format, ingest, read_records  # noqa: E402
from plugin.learn.train.datasets import load_dataset  # noqa: E402
from plugin.learn.reranker_store import tenant_dir  # noqa: E402
from plugin.learn.reranker_synthetic import record_posts, synthetic_posts  # noqa: E402
from plugin.kv import KV  # noqa: E402
from plugin.service.services import Services  # noqa: E402
from plugin.settings import Settings  # noqa: E402

DATASET = ROOT / "samples" / "clef2020"


def env_of(settings: Settings) -> dict[str, str]:
    """The recalibration benchmark's subprocess environment, with this namespace's fact-check
    index and the folders the settings were given (the NLTK data)."""
    from scripts.recalibration_bench import env_of as base_env

    folders = {k: v for k, v in os.environ.items() if k.startswith("FACTSIEVE_") and k.endswith("_DIR")}
    return {**base_env(settings), **folders, "FACTSIEVE_INDEX": settings.index}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="300,1000")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    tag = uuid.uuid4().hex[:8]
    settings = Settings().model_copy(update={
        "redis_prefix": f"bench-rr-{tag}", "review_index": f"bench-review-{tag}",
        "decisions_index": f"bench-decisions-{tag}", "index": f"bench-fc-{tag}"})
    services = Services(settings)
    data = load_dataset(DATASET)
    runs, tenants = [], []
    try:
        services.factchecks.ensure()
        ingest(read_records([DATASET / "factchecks.jsonl"], Format.jsonl), store=services.store,
               embedder=services.embedder, index=settings.index)
        ids = [json.loads(line)["id"] for line in (DATASET / "factchecks.jsonl").read_text().splitlines() if line]
        for n in (int(s) for s in args.sizes.split(",")):
            tenant = f"bench-{n}-{tag}"
            tenants.append(tenant)
            record_posts(services.review, tenant,
                         synthetic_posts(data.queries, data.qrels["all"], ids, n, seed=args.seed))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "cli.main", "learn", "reranker", "--tenant", tenant,
                                   "--epochs", str(args.epochs), "--json"],
                                  cwd=ROOT, env=env_of(settings), capture_output=True, text=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(done.stderr[-3000:])
            out = json.loads(done.stdout)
            runs.append({"decisions": n, "command_cpu_s": round(after.ru_utime + after.ru_stime
                                                                 - before.ru_utime - before.ru_stime, 1),
                         "command_wall_s": round(wall, 1), "groups": out["groups"],
                         "seconds": out["seconds"], "promoted": out["promoted"], "reason": out["reason"],
                         "champion": out["champion"], "challenger": out["challenger"]})
    finally:
        KV(settings).delete_namespace()
        for alias in (settings.review_index, settings.decisions_index, settings.index):
            services.store.delete_index(f"{alias}-v*")
            services.store.delete_index_template(f"factsieve-{alias}")
        for tenant in tenants:
            shutil.rmtree(tenant_dir(settings, tenant), ignore_errors=True)
    print(json.dumps({"epochs": args.epochs, "seed": args.seed, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
