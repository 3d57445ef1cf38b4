"""Server-side fusion planning: when can a configuration run as one OpenSearch ``hybrid`` query?

The neural-search plugin fuses a ``hybrid`` query's sub-queries inside OpenSearch through a
search pipeline (normalization-processor, or score-ranker-processor for RRF in 2.19+). Its
limits decide what fits: at most 5 sub-queries, the hybrid query must be top-level, weights
must sum to 1 (normalisation) and RRF takes no weights in 2.19, and a hybrid query sent without
its pipeline silently returns unfused scores. ``server_plan`` checks all of that and returns
either a plan or the reason it does not fit; the matcher then fuses client-side over one
``_msearch`` (``plugin.search.fuse``), which gives the same ranking for every plan that does fit
(up to the order of exactly tied documents: OpenSearch breaks ties by index order).

Pipelines are data (``index_templates/pipelines/``) installed by ``factsieve init``
(``config_pipelines`` lists what the configurations need), never by the query path: a plan
whose pipeline is not installed does not fit, and the match fuses client-side.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from plugin.search.queries import whole_query
from plugin.search.retrieval import Fusion, RetrievalConfig
from plugin.index.bodies import load_template, render

MAX_SUBQUERIES = 5
#: the only RRF rank constant neural-search 2.19 applies, whatever the pipeline says (measured
#: here: k = 20 in the pipeline scored 1/(60 + r); fixed upstream after 2.19)
NEURAL_RRF_K = 60
NEURAL_PLUGIN = "opensearch-neural-search"
#: What a sub-query body says about the fields its hits carry; the hybrid body copies it.
FETCH_KEYS = ("_source", "stored_fields", "docvalue_fields")


class FitReason(str):
    """Why a configuration does or does not fit a hybrid query (readable as the ``str`` it is).
    ``pipeline``: the search pipeline it would fit with, when that is all it lacks (installed
    later by ``factsieve init``, so worth looking for again), else ``None``."""

    pipeline: str | None = None

    @classmethod
    def uninstalled(cls, pipeline: str) -> FitReason:
        why = cls(f"search pipeline {pipeline} is not installed: run `factsieve init`")
        why.pipeline = pipeline
        return why


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


def fusion_pipeline(config: RetrievalConfig, weights: Sequence[float]) -> tuple[str, dict[str, Any]] | str:
    """The search pipeline ``(name, body)`` that fuses ``config``'s sub-queries with these
    weights (in sub-query order) inside OpenSearch, or the reason none can.

    The name is a digest of the body, so every process and ``factsieve init`` agree on it.
    """
    if len(weights) > MAX_SUBQUERIES:
        return f"{len(weights)} sub-queries; a hybrid query takes at most {MAX_SUBQUERIES}"
    if len(weights) < 2:
        return "a single sub-query needs no fusion"
    if config.fusion is Fusion.RRF:
        if len(set(weights)) != 1:
            return "score-ranker-processor RRF takes no per-query weights in OpenSearch 2.19"
        if config.rrf_k != NEURAL_RRF_K:
            return (f"score-ranker-processor ignores rank_constant in neural-search 2.19 (always "
                    f"{NEURAL_RRF_K}; opensearch-project/neural-search#1370): k = {config.rrf_k} "
                    "would rank differently")
        template, values = "pipelines/hybrid-rrf", {"rank_constant": config.rrf_k}
    else:
        template, values = "pipelines/hybrid-minmax", {"weights": normalised_weights(list(weights))}
    digest = hashlib.sha1(json.dumps([template, values], sort_keys=True).encode()).hexdigest()[:10]
    name = f"factsieve-{config.name or 'adhoc'}-{digest}"
    return name, render(load_template(template), {**values, "name": name})


def config_pipelines(configs: Iterable[RetrievalConfig]) -> dict[str, dict[str, Any]]:
    """Every pipeline these configurations can fuse with server-side, by name: one per weight
    set (monolingual, and crosslingual where it differs) that fits a hybrid query. What
    ``factsieve init`` installs; configurations with LLM variants are planned with all of them."""
    out: dict[str, dict[str, Any]] = {}
    for cfg in configs:
        for crosslingual in (False, True):
            got = fusion_pipeline(cfg, list(cfg.weights(crosslingual=crosslingual).values()))
            if isinstance(got, tuple):
                out[got[0]] = got[1]
    return out


def server_plan(config: RetrievalConfig, bodies: dict[str, dict[str, Any]],
                weights: dict[str, float], *, size: int,
                plugins: set[str], pipelines: set[str] | None = None) -> tuple[ServerPlan | None, FitReason]:
    """A hybrid-query plan for these sub-query bodies, or ``(None, reason)``. ``pipelines``:
    the search pipelines installed on the cluster (``None``: do not check)."""
    if NEURAL_PLUGIN not in plugins:
        return None, FitReason("the cluster has no neural-search plugin")
    got = fusion_pipeline(config, [weights[n] for n in bodies])
    if isinstance(got, str):
        return None, FitReason(got)
    name, pipeline_body = got
    if pipelines is not None and name not in pipelines:
        return None, FitReason.uninstalled(name)
    # the hybrid query returns what the sub-queries would: candidate doc values, no _source
    first = next(iter(bodies.values()))
    body = {"size": size, **{k: first[k] for k in FETCH_KEYS if k in first},
            # a rescore cannot ride in a sub-query: BM25's is folded back into its query
            "query": {"hybrid": {"queries": [whole_query(b) for b in bodies.values()]}}}
    return ServerPlan(pipeline=name, pipeline_body=pipeline_body, body=body), FitReason("fits")
