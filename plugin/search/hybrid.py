"""Server-side fusion planning: when can a configuration run as one OpenSearch ``hybrid`` query?

The neural-search plugin fuses a ``hybrid`` query's sub-queries inside OpenSearch through a
search pipeline (normalization-processor, or score-ranker-processor for RRF in 2.19+). Its
limits decide what fits: at most 5 sub-queries, the hybrid query must be top-level, weights
must sum to 1 (normalisation) and RRF takes no weights in 2.19, and a hybrid query sent without
its pipeline silently returns unfused scores. ``server_plan`` checks all of that and returns
either a plan or the reason it does not fit; the matcher then fuses client-side over one
``_msearch`` (``plugin.search.fuse``), which gives the same ranking for every plan that does fit.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from plugin.search.retrieval import Fusion, RetrievalConfig
from plugin.index.bodies import load_template, render

MAX_SUBQUERIES = 5
NEURAL_PLUGIN = "opensearch-neural-search"
#: What a sub-query body says about the fields its hits carry; the hybrid body copies it.
FETCH_KEYS = ("_source", "stored_fields", "docvalue_fields")


@dataclass(frozen=True)
class ServerPlan:
    pipeline: str
    pipeline_body: dict[str, Any]
    body: dict[str, Any]


def normalised_weights(weights: list[float]) -> list[float]:
    total = sum(weights)
    if total <= 0:
        raise ValueError("weights must not all be zero")
    return [round(w / total, 6) for w in weights]


def server_plan(config: RetrievalConfig, bodies: dict[str, dict[str, Any]],
                weights: dict[str, float], *, size: int,
                plugins: set[str]) -> tuple[ServerPlan | None, str]:
    """A hybrid-query plan for these sub-query bodies, or ``(None, reason)``."""
    if NEURAL_PLUGIN not in plugins:
        return None, "the cluster has no neural-search plugin"
    if len(bodies) > MAX_SUBQUERIES:
        return None, f"{len(bodies)} sub-queries; a hybrid query takes at most {MAX_SUBQUERIES}"
    if len(bodies) < 2:
        return None, "a single sub-query needs no fusion"
    if config.boosts or config.collapse or config.rerank:
        # these run client-side after fusion anyway; server fusion still fits
        pass
    names = list(bodies)
    ws = [weights[n] for n in names]
    if config.fusion is Fusion.RRF:
        if len(set(ws)) != 1:
            return None, "score-ranker-processor RRF takes no per-query weights in OpenSearch 2.19"
        template, values = "pipelines/hybrid-rrf", {"rank_constant": config.rrf_k}
    else:
        template, values = "pipelines/hybrid-minmax", {"weights": normalised_weights(ws)}
    digest = hashlib.sha1(json.dumps([template, values], sort_keys=True).encode()).hexdigest()[:10]
    name = f"factsieve-{config.name or 'adhoc'}-{digest}"
    pipeline_body = render(load_template(template), {**values, "name": name})
    # the hybrid query returns what the sub-queries would: candidate doc values, no _source
    first = next(iter(bodies.values()))
    body = {"size": size, **{k: first[k] for k in FETCH_KEYS if k in first},
            "query": {"hybrid": {"queries": [b["query"] for b in bodies.values()]}}}
    return ServerPlan(pipeline=name, pipeline_body=pipeline_body, body=body), "fits"
