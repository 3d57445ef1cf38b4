"""FactSieve's embedding model hosted inside OpenSearch (ML Commons), so that tools which talk to
OpenSearch directly get FactSieve's vectors: documents they write are embedded by an ingest
pipeline, and their text queries by a ``neural`` query (the stored template ``factsieve-match``).

The model OpenSearch hosts is the very ONNX graph the local embedder runs (int8 by default),
with its tokenizer set to the same truncation, uploaded in chunks over HTTP: that works the same
for the local node, a Docker node and a remote cluster, none of which can read our files.
ML Commons runs it with its own onnxruntime, so vectors agree closely with the local ones
(measured: docs/design/measurements.md).

``ensure_hosted_model`` is idempotent: a model with the same name and content hash is reused
(deployed again if it is not), and a deployment is awaited until the model answers a
prediction, because after a node restart ML Commons reports DEPLOYED for ~26 s before it does.
Pure parts (``bundle_name``, ``register_body``, ``embed_pipeline_body``) are testable alone.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from plugin.errors import BackendError, BackendUnavailable, BadInput, ModelUnavailable, NotFound
from plugin.index.bodies import ANALYZED_LANGS, load_template, render
from plugin.index.store import Store

log = logging.getLogger(__name__)

ML_PLUGIN = "opensearch-ml"
#: ML Commons refuses chunks of 10 MB or more
CHUNK_BYTES = 9 * 1024 * 1024
#: the setting a cluster needs before it accepts a model uploaded in chunks
UPLOAD_SETTING = "plugins.ml_commons.allow_registering_model_via_local_file"


@dataclass(frozen=True)
class Bundle:
    """The zip ML Commons takes: the ONNX graph and its ``tokenizer.json`` at the root."""

    path: Path
    sha256: str
    size: int
    name: str


@dataclass(frozen=True)
class HostedModel:
    model_id: str
    name: str
    sha256: str
    onnx_file: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bundle_name(model: str, onnx_file: str) -> str:
    """ML Commons' model name: lower-case letters, digits and dashes only (it derives file
    paths from the name; one with a dot in it failed to deploy)."""
    stem = Path(onnx_file).stem
    slug = re.sub(r"[^a-z0-9]+", "-", f"{Path(model).name}-{stem}".lower()).strip("-")
    return f"factsieve-{slug}"[:80]


def build_bundle(folder: Path, onnx_path: Path, *, name: str, max_seq_length: int,
                 out_dir: Path) -> Bundle:
    """The model zip, written once per (graph, tokenizer, truncation) into ``out_dir``.

    ``tokenizer.json`` gets the local embedder's truncation (ML Commons otherwise cuts at 512
    tokens, the local embedder at ``max_seq_length``: a long fact-check would get another vector).
    Stored, not deflated: the graph barely compresses and the hash must be cheap to recompute.
    """
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["truncation"] = {"direction": "Right", "max_length": max_seq_length,
                               "strategy": "LongestFirst", "stride": 0}
    tok_bytes = json.dumps(tokenizer, ensure_ascii=False).encode("utf-8")
    stat = onnx_path.stat()
    key = hashlib.sha256(f"{onnx_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
                         + tok_bytes).hexdigest()[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{key}.zip"
    if not path.is_file():
        tmp = path.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
            zf.write(onnx_path, "model.onnx")
            zf.writestr("tokenizer.json", tok_bytes)
        tmp.replace(path)
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return Bundle(path=path, sha256=digest.hexdigest(), size=path.stat().st_size, name=name)


def chunk_count(size: int, chunk: int = CHUNK_BYTES) -> int:
    return max(1, -(-size // chunk))


def register_body(bundle: Bundle, *, dimension: int, description: str) -> dict[str, Any]:
    """The ``_plugins/_ml/models/_register_meta`` body for an ONNX sentence-embedding graph.

    ``pooling_mode: cls`` takes the graph's output as it is: it is already pooled and normalised.
    ``model_type: xlm-roberta`` (not ``bert``, which feeds a ``token_type_ids`` input the graph
    does not have)."""
    return {"name": bundle.name, "version": "1", "model_format": "ONNX",
            "function_name": "TEXT_EMBEDDING", "description": description,
            "model_content_hash_value": bundle.sha256,
            "model_content_size_in_bytes": bundle.size, "total_chunks": chunk_count(bundle.size),
            "model_config": {"model_type": "xlm-roberta", "embedding_dimension": dimension,
                             "framework_type": "sentence_transformers", "pooling_mode": "cls",
                             "normalize_result": False}}


def find_model_query(name: str, sha256: str) -> dict[str, Any]:
    """Models (not their chunks) with this name and content hash, newest first."""
    return {"size": 5, "sort": [{"created_time": {"order": "desc"}}],
            "query": {"bool": {"filter": [{"term": {"name.keyword": name}},
                                          {"term": {"model_content_hash_value": sha256}}],
                               "must_not": [{"exists": {"field": "chunk_number"}}]}}}


def embed_pipeline_body(model_id: str, *, passage_prefix: str, description: str) -> dict[str, Any]:
    """The ingest pipeline that gives a fact-check written without a vector the one FactSieve's
    own ingest computes (``plugin.ingest.pipeline.embed_factchecks``): the mean of the prefixed
    claim and title+claim passage embeddings, L2-normalised, plus the per-language analysed
    fields. A document that arrives with ``embedding`` passes through untouched."""
    return render(load_template("ingest/factsieve-embed"),
                  {"model_id": model_id, "passage_prefix": passage_prefix,
                   "langs": list(ANALYZED_LANGS), "description": description})


class HostedModels:
    """ML Commons calls for one cluster; ``sleep`` and ``clock`` are injectable for tests."""

    def __init__(self, store: Store, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.sleep = sleep
        self.clock = clock

    def available(self) -> bool:
        return ML_PLUGIN in self.store.plugins()

    def find(self, name: str, sha256: str) -> dict[str, Any] | None:
        try:
            found = self.store.request("find hosted model", "POST", "/_plugins/_ml/models/_search",
                                       find_model_query(name, sha256))
        except NotFound:  # no model index yet
            return None
        hits = found.get("hits", {}).get("hits", [])
        if not hits:
            return None
        return {"model_id": hits[0]["_id"], **hits[0]["_source"]}

    def state(self, model_id: str) -> str:
        got = self.store.request(f"get model {model_id}", "GET", f"/_plugins/_ml/models/{model_id}")
        return str(got.get("model_state", ""))

    def register(self, bundle: Bundle, *, dimension: int, description: str) -> str:
        try:
            created = self.store.request("register model", "POST", "/_plugins/_ml/models/_register_meta",
                                         register_body(bundle, dimension=dimension,
                                                       description=description))
        except BadInput as exc:
            if "allow_registering_model_via_local_file" in str(exc):
                raise BackendError(
                    f"the cluster refuses uploaded models: set {UPLOAD_SETTING}=true (a dynamic "
                    f"cluster setting; scripts/services.sh and docker-compose.yml set it)") from exc
            raise
        model_id = str(created["model_id"])
        data = bundle.path.read_bytes()
        for i in range(chunk_count(bundle.size)):
            self.store.request(f"upload chunk {i} of model {model_id}", "POST",
                               f"/_plugins/_ml/models/{model_id}/upload_chunk/{i}",
                               data[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES])
        return model_id

    def deploy(self, model_id: str, *, timeout_s: float) -> None:
        task = self.store.request(f"deploy model {model_id}", "POST",
                                  f"/_plugins/_ml/models/{model_id}/_deploy")
        task_id = task.get("task_id")
        deadline = self.clock() + timeout_s
        while task_id:
            got = self.store.request(f"deploy task {task_id}", "GET", f"/_plugins/_ml/tasks/{task_id}")
            state = got.get("state")
            if state == "COMPLETED":
                return
            if state not in ("CREATED", "RUNNING"):
                raise BackendError(f"deploying model {model_id} failed ({state}): {got.get('error')}; "
                                   "see the OpenSearch log")
            if self.clock() > deadline:
                raise BackendUnavailable(f"model {model_id} did not deploy in {timeout_s:.0f} s")
            self.sleep(1.0)

    def predict(self, model_id: str, texts: list[str]) -> list[list[float]]:
        got = self.store.request(f"predict with model {model_id}", "POST",
                                 f"/_plugins/_ml/_predict/text_embedding/{model_id}",
                                 {"text_docs": texts, "target_response": ["sentence_embedding"]})
        return [r["output"][0]["data"] for r in got["inference_results"]]

    def wait_ready(self, model_id: str, *, timeout_s: float) -> float:
        """Seconds until the model answers a prediction (DEPLOYED is not enough after a restart).
        The client's warning per refused poll is expected here, so it is held back."""
        t0 = self.clock()
        client_log = logging.getLogger("opensearch")
        level = client_log.level
        while True:
            try:
                client_log.setLevel(logging.ERROR)
                try:
                    self.predict(model_id, ["query: ready?"])
                finally:
                    client_log.setLevel(level)
                return self.clock() - t0
            except (BadInput, BackendError, BackendUnavailable) as exc:
                if self.clock() - t0 > timeout_s:
                    raise BackendUnavailable(f"model {model_id} does not answer after "
                                             f"{timeout_s:.0f} s: {exc}") from exc
                self.sleep(1.0)

    def ensure(self, bundle: Bundle, *, dimension: int, onnx_file: str, description: str,
               timeout_s: float = 300.0) -> HostedModel:
        """The bundle registered (once), deployed and answering."""
        found = self.find(bundle.name, bundle.sha256)
        if found is not None and self.state(found["model_id"]) == "REGISTERING":
            # an upload that was cut off: its chunks are incomplete, so register anew (deleting
            # it needs delete-by-query, which the local node's module set lacks)
            found = None
        if found is None:
            model_id = self.register(bundle, dimension=dimension, description=description)
            log.info("registered %s as %s", bundle.name, model_id)
        else:
            model_id = found["model_id"]
        if self.state(model_id) != "DEPLOYED":
            self.deploy(model_id, timeout_s=timeout_s)
        self.wait_ready(model_id, timeout_s=timeout_s)
        return HostedModel(model_id=model_id, name=bundle.name, sha256=bundle.sha256,
                           onnx_file=onnx_file)


def local_bundle(embedder: Any, cache_dir: Path) -> tuple[Bundle, str]:
    """The bundle of the ONNX graph ``embedder`` runs, and that graph's file name. Only the ONNX
    backend can be hosted: a sentence-transformers model would need exporting first."""
    model_path = getattr(embedder, "model_path", None)
    if model_path is None:
        raise ModelUnavailable(f"{embedder.name!r} is not an ONNX model: only ONNX graphs can be "
                               "hosted in OpenSearch (export it, or set FACTSIEVE_HOST_MODEL=false)")
    model_path = Path(model_path)
    folder = model_path.parent.parent if model_path.parent.name == "onnx" else model_path.parent
    bundle = build_bundle(folder, model_path, name=bundle_name(embedder.name, model_path.name),
                          max_seq_length=embedder.max_seq_length, out_dir=cache_dir / "hosted")
    return bundle, model_path.name
