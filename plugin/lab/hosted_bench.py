"""``factsieve bench --hosted``: what the model inside OpenSearch costs, next to FactSieve's own path.

- ``template_latency``: the stored template ``factsieve-match`` sent by a plain HTTP client (one
  keep-alive ``http.client`` connection, as a newsroom tool would hold; no opensearch-py), p50/p95
  for the same posts a ``factsieve match`` latency run uses.
- ``ingest_rates``: fact-checks per second written two ways into scratch indexes: FactSieve's
  ingest (embedding here, then bulk) and a bulk of bare documents that the default ingest
  pipeline embeds inside OpenSearch.
"""
from __future__ import annotations

import http.client
import json
import time
import uuid
from itertools import islice
from typing import Any
from urllib.parse import urlsplit

from plugin.embedding import Embedder
from plugin.errors import NotFound
from plugin.index.hosted import HostedModels, embed_pipeline_body, local_bundle
from plugin.index.store import Store
from plugin.index.templates import IndexSpec, ensure_index
from plugin.ingest import Format, ingest, read_records
from plugin.lab.evaluate.metrics import percentile
from plugin.learn.train.datasets import Dataset
from plugin.search.normalize import normalize_post
from plugin.settings import Settings


def template_latency(url: str, alias: str, template_id: str, texts: list[str], *,
                     mode: str, k: int = 10) -> dict[str, Any]:
    """p50/p95 of ``POST <alias>/_search/template`` over one keep-alive connection. Posts go
    normalised (what ``factsieve match`` searches with), without ``lang`` (a template cannot
    detect it)."""
    parts = urlsplit(url)
    if parts.username or parts.scheme != "http":
        raise NotFound("the template benchmark speaks plain http to an unsecured node only")
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 9200, timeout=30)
    took: list[float] = []
    hits = 0
    try:
        for text in texts:
            body = json.dumps({"id": template_id, "params": {
                "query_text": normalize_post(text) or text, "k": k, "mode": mode}})
            t0 = time.perf_counter()
            conn.request("POST", f"/{alias}/_search/template", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            took.append((time.perf_counter() - t0) * 1e3)
            if resp.status != 200:
                raise NotFound(f"search template {template_id!r} answered {resp.status}: {data[:200]!r}")
            hits += len(json.loads(data)["hits"]["hits"])
    finally:
        conn.close()
    return {"p50": round(percentile(took, 0.5), 2), "p95": round(percentile(took, 0.95), 2),
            "queries": len(took), "mean_hits": round(hits / max(1, len(took)), 1),
            "client": "http.client, one keep-alive connection"}


def ingest_rates(store: Store, embedder: Embedder, settings: Settings, dataset: Dataset,
                 n: int = 500) -> dict[str, Any]:
    """Docs/s for the first ``n`` fact-checks of ``dataset``: embedded here (FactSieve's ingest)
    vs embedded by the hosted model in the default ingest pipeline. Scratch indexes, deleted."""
    models = HostedModels(store)
    if not models.available():
        return {"skipped": "the cluster has no ML Commons"}
    bundle, onnx_file = local_bundle(embedder, settings.cache_dir)
    found = models.find(bundle.name, bundle.sha256)
    if found is None:
        return {"skipped": "the embedding model is not hosted: run `factsieve init`"}
    model_id = found["model_id"]
    models.wait_ready(model_id, timeout_s=settings.host_model_timeout_s)
    lines = (dataset.path / "factchecks.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    docs = [json.loads(line) for line in lines if line.strip()]
    tag = uuid.uuid4().hex[:8]
    out: dict[str, Any] = {"docs": len(docs), "model_id": model_id, "onnx_file": onnx_file}
    client_alias, server_alias = f"bench-ingest-client-{tag}", f"bench-ingest-pipeline-{tag}"
    pipeline = f"{server_alias}-embed"
    try:
        store.put_ingest_pipeline(pipeline, embed_pipeline_body(
            model_id, passage_prefix=settings.passage_prefix, description="bench"))
        for alias in (client_alias, server_alias):
            ensure_index(store, IndexSpec(alias=alias, model=embedder.name, dimension=embedder.dim))
            # both as `factsieve init` leaves the fact-check index: FactSieve's own documents
            # pass through the pipeline (they carry their vector), the bare ones are embedded
            store.put_index_settings(alias, {"default_pipeline": pipeline})
        t0 = time.perf_counter()
        report = ingest(islice(read_records([dataset.path / "factchecks.jsonl"], Format.jsonl), n),
                        store=store, embedder=embedder, index=client_alias,
                        batch_size=settings.embedding_batch_size)
        secs = time.perf_counter() - t0
        out["client"] = {"docs_per_s": round((report.indexed + report.updated) / secs, 1),
                         "seconds": round(secs, 2), "rejected": report.rejected}
        actions = ({"_op_type": "index", "_index": server_alias, "_id": str(d.get("id", i)),
                    "_source": {k: v for k, v in d.items() if k != "embedding"}}
                   for i, d in enumerate(docs))
        t0 = time.perf_counter()
        results = list(store.bulk(actions, chunk_size=settings.embedding_batch_size, refresh=True))
        secs = time.perf_counter() - t0
        failed = [info for ok, info in results if not ok]
        out["pipeline"] = {"docs_per_s": round((len(results) - len(failed)) / secs, 1),
                           "seconds": round(secs, 2), "rejected": len(failed),
                           "first_reject": failed[0] if failed else None,
                           "bulk_chunk": settings.embedding_batch_size}
    finally:
        for alias in (client_alias, server_alias):
            store.delete_index(f"{alias}-v*")
        try:
            store.request("delete bench pipeline", "DELETE", f"/_ingest/pipeline/{pipeline}")
        except NotFound:
            pass
    return out
