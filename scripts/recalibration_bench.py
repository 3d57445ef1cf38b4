"""What ``factsieve learn calibrate`` costs and gains on synthetic decision logs; prints JSON.

For each size in ``--sizes``, records that many synthetic decisions (``plugin.learn.
calibration_synthetic``: a tenant for whom the packaged confidence is miscalibrated in a known
way) through ``ReviewDesk.record_item``/``decide`` in a private namespace of the configured
OpenSearch and Redis, runs the command as a subprocess (its CPU time, interpreter start and
imports included, and its wall time), and times the fit alone in this process. Then deletes the
namespace again.

    PYTHONPATH=. python scripts/recalibration_bench.py [--sizes 300,1000] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from plugin.index.store import Store  # noqa: E402
from plugin.learn.calibrate import fit_tenant  # noqa: E402
from plugin.learn.calibration_store import tenant_decisions  # noqa: E402
from plugin.learn.calibration_synthetic import (TRUE_MAP, record_through_desk,  # noqa: E402
                                                 synthetic_decisions)
from plugin.kv import KV  # noqa: E402
from plugin.service.services import Services  # noqa: E402
from plugin.settings import Settings  # noqa: E402


def env_of(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FACTSIEVE_")}
    env.update({"FACTSIEVE_ENV_FILE": "", "PYTHONPATH": str(ROOT),
                "FACTSIEVE_OPENSEARCH_URL": settings.opensearch_url, "FACTSIEVE_REDIS_URL": settings.redis_url,
                "FACTSIEVE_REDIS_PREFIX": settings.redis_prefix,
                "FACTSIEVE_DECISIONS_INDEX": settings.decisions_index,
                "FACTSIEVE_REVIEW_INDEX": settings.review_index})
    return env


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="300,1000")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    tag = uuid.uuid4().hex[:8]
    settings = Settings().model_copy(update={
        "redis_prefix": f"bench-learn-{tag}", "review_index": f"bench-review-{tag}",
        "decisions_index": f"bench-decisions-{tag}"})
    services = Services(settings)
    runs = []
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            tenant = f"bench-{n}"
            record_through_desk(services.review, tenant, synthetic_decisions(n, seed=args.seed, tenant=tenant))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "cli.main", "learn", "calibrate", "--tenant", tenant,
                                   "--json"], cwd=ROOT, env=env_of(settings), capture_output=True, text=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            out = json.loads(done.stdout)
            decisions = list(tenant_decisions(services.review, tenant))
            c0 = time.process_time()
            fit_tenant(decisions, tenant)
            fit_cpu = time.process_time() - c0
            runs.append({"decisions": n, "fitted_decisions": out["decisions"],
                         "command_cpu_s": round(after.ru_utime + after.ru_stime
                                                - before.ru_utime - before.ru_stime, 3),
                         "command_wall_s": round(wall, 3), "fit_cpu_s": round(fit_cpu, 4),
                         "ece_before": out["ece_before"], "ece_after": out["ece_after"],
                         "ece_at_1_before": out["ece_at_1_before"], "ece_at_1_after": out["ece_at_1_after"],
                         "tier": out["tier"]})
    finally:
        KV(settings).delete_namespace()
        store = Store(settings)
        for alias in (settings.review_index, settings.decisions_index):
            store.delete_index(f"{alias}-v*")
            store.delete_index_template(f"factsieve-{alias}")
    print(json.dumps({"true_map": TRUE_MAP, "seed": args.seed, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
