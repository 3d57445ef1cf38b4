#!/usr/bin/env python3
"""Train a sweep of LoRA rerankers from a pack on an accelerator box (numpy + JAX only).

Here (OpenSearch, the model cache and the fold query towers live here):

    factsieve train-reranker mine --dataset DIR --out groups.jsonl
    FACTSIEVE_QUERY_ADAPTER_DIR=towers/ factsieve train-reranker lora-pack --groups groups.jsonl \\
        --query-encoders fold0,fold1,fold2 --out .cache/lora-pack/pack.npz

There (python3 with numpy and JAX, and this checkout):

    python3 scripts/train_lora_remote.py --pack .cache/lora-pack/pack.npz --out OUT \\
        --sweep '[{"name": "l12r16", "layers": 12, "rank": 16, "epochs": 3, "negatives": 31}]'

Back here:

    factsieve train-reranker lora-import --from OUT --sweep    # out-of-fold MAP@5 of every entry
    factsieve train-reranker lora-import --from OUT --name l12r16 --as clef2020-e5small-lora

The box needs none of our API stack: ``plugin/embedding/__init__`` and ``plugin/build/__init__``
(which import the settings and so pydantic) are bypassed by registering those folders as bare
packages before anything imports them; the test suite runs this script with pydantic unimportable.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# of these packages only numpy-only modules are used there (embedding/adapter.py: save_adapter,
# ADAPTABLE; build/graph.py: BertShape); their __init__ files import the settings
for _name in ("plugin.embedding", "plugin.build"):
    _package = types.ModuleType(_name)
    _package.__path__ = [str(ROOT.joinpath(*_name.split(".")))]
    sys.modules.setdefault(_name, _package)

from plugin.learn.train.tower import load_jax  # noqa: E402
from plugin.lab.reranker.lora_pack import train_from_pack  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pack", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sweep", required=True, help="a JSON list of option dicts, each with a name")
    ap.add_argument("--platform", default=None, help="cpu to force JAX onto the CPU (default: its choice)")
    ap.add_argument("--compile-cache", type=Path, default=Path("/tmp/factsieve-jax-cache"),
                    help="JAX's persistent compilation cache: the folds of an entry reuse its programs")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    text = args.sweep if args.sweep.lstrip().startswith("[") else Path(args.sweep).read_text()
    sweep = json.loads(text)
    if not isinstance(sweep, list) or not all(isinstance(e, dict) and e.get("name") for e in sweep):
        print("--sweep: expected a JSON list of objects, each with a name", file=sys.stderr)
        return 2
    jax = load_jax(args.platform)
    jax.config.update("jax_compilation_cache_dir", str(args.compile_cache))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    device = jax.devices()[0]
    logging.info("JAX %s on %s", jax.__version__, jax.devices())
    summary = train_from_pack(jax, args.pack, args.out, sweep,
                              device=f"{device.platform}: {getattr(device, 'device_kind', '')}",
                              fixed_width=device.platform != "cpu")
    print(json.dumps({"entries": [{"name": e["name"], "seconds": e["seconds"]} for e in summary["entries"]]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
