"""A tenant's reranker update end to end over the real OpenSearch and Redis: decided posts
recorded through the desk (``plugin.learn.reranker_synthetic`` over the bundled CLEF-2020 slice),
``learn_reranker`` fine-tuning from the packaged adapter for one epoch on a small reference set,
the gate refusing a challenger trained on flipped labels, a promoted one serving that tenant's
reranked matches alone, ``rollback`` and a failed attempt leaving the champion serving."""
from __future__ import annotations

import json
import shutil
import uuid

import pytest

from cli.learn import reranker_parts
from plugin.errors import BadInput, NotFound
from plugin.learn.train.datasets import load_dataset
from plugin.learn.reranker_store import tenant_dir
from plugin.learn.reranker_synthetic import record_posts, synthetic_posts
from plugin.search.retrieval import retrieval_config
from plugin.learn.reranker_train import LearnOptions, learn_reranker
from tests.conftest import SAMPLES
from tests.integration.conftest import cleanup_deployment, namespaced

pytestmark = pytest.mark.integration

CONFIG = "hybrid-rerank"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A small reference dataset: 6 train queries replayed, 4 dev queries scored by the gate."""
    folder = tmp_path_factory.mktemp("reference")
    queries = [json.loads(line) for line in (SAMPLES / "clef2020" / "queries.jsonl").read_text().splitlines()]
    kept = [q for q in queries if q["split"] == "train"][:6] + [q for q in queries if q["split"] == "dev"][:4]
    ids = {q["id"] for q in kept}
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in kept))
    qrels = (SAMPLES / "clef2020" / "qrels.jsonl").read_text().splitlines()
    (folder / "qrels.jsonl").write_text("".join(line + "\n" for line in qrels if json.loads(line)["query_id"] in ids))
    shutil.copyfile(SAMPLES / "clef2020" / "factchecks.jsonl", folder / "factchecks.jsonl")
    return folder


@pytest.fixture(scope="module")
def deployment(settings, store, embedder, sample_alias):
    from plugin.service.services import Services

    tag = uuid.uuid4().hex[:8]
    s = namespaced(settings, tag, index=sample_alias, learn_cache_s=0.0)
    services = Services(s, store=store, embedder=embedder)
    tenants = {"a": f"rra-{tag}", "b": f"rrb-{tag}", "few": f"rrf-{tag}"}
    data = load_dataset(SAMPLES / "clef2020")
    ids = [json.loads(line)["id"] for line in (SAMPLES / "clef2020" / "factchecks.jsonl").read_text().splitlines()]
    record_posts(services.review, tenants["a"], synthetic_posts(data.queries, data.qrels["all"], ids, 40))
    record_posts(services.review, tenants["few"], synthetic_posts(data.queries, data.qrels["all"], ids, 6))
    try:
        yield services, tenants
    finally:
        for t in tenants.values():
            shutil.rmtree(tenant_dir(s, t), ignore_errors=True)
        cleanup_deployment(s, store)


def test_the_gate_refuses_a_challenger_trained_on_flipped_labels(deployment, reference) -> None:
    services, tenants = deployment
    report = learn_reranker(reranker_parts(services), tenants["a"], LearnOptions(
        reference=reference, flip_labels=True, lr=2e-3, head_lr=5e-3, epochs=2))
    assert report["promoted"] is False
    assert report["challenger"]["MAP@5"] < report["champion"]["MAP@5"], report
    assert report["groups"]["replay"] == 6 and report["groups"]["dev"] == 4
    assert services.champions.get(tenants["a"]) is None  # the packaged reranker still serves
    assert not any(tenant_dir(services.settings, tenants["a"]).glob("*/model"))  # nothing built
    logged = services.champions.attempts(tenants["a"])[0]
    assert logged["promoted"] is False and logged["champion"] == report["champion"]
    assert logged["challenger"] == report["challenger"]
    assert report["trained_on"].startswith("CPU (JAX") and logged["trained_on"] == report["trained_on"]


def test_a_promoted_challenger_serves_its_tenant_alone_until_rolled_back(deployment, reference) -> None:
    from plugin.models import Mode
    from plugin.search.matcher import MatchRequest

    services, tenants = deployment
    packaged = services.matcher(CONFIG, rerank=True).reranker
    assert packaged is not None, "the packaged reranker is built by the session's model build"
    # a challenger is promoted whatever it gains here (one epoch barely moves it): no language
    # may still drop by more than the gate allows
    report = learn_reranker(reranker_parts(services), tenants["a"], LearnOptions(reference=reference, min_gain=-1.0))
    assert report["promoted"] is True, report
    record = services.champions.get(tenants["a"])
    assert record["version"] == report["version"] and record["replaced"] == "packaged"
    assert record["champion"] == report["champion"] and record["challenger"] == report["challenger"]
    folder = services.champions.folder(record)
    assert (folder / "onnx" / "model.onnx").is_file()
    assert str(folder).startswith(str(services.settings.model_cache_dir / "learned-rerankers"))

    mine = services.matcher(CONFIG, rerank=True, tenant=tenants["a"])
    assert str(mine.reranker.folder) == str(folder)
    assert services.matcher(CONFIG, rerank=True, tenant=tenants["b"]).reranker is packaged
    assert services.matcher(CONFIG, rerank=False, tenant=tenants["a"]).reranker is None
    # the first stage is sure of this post (``rerank.skip_at`` would keep its order): every head reranked here
    served = retrieval_config(CONFIG)
    every_head = served.model_copy(update={"rerank": served.rerank.model_copy(update={"skip_at": None})})
    result = mine.match(MatchRequest(text="America has more governors who wore blackface than black "
                                          "governors", lang="en", mode=Mode.CROSS, k=5, rerank=True), every_head)
    assert result.matches and "rerank" in result.matches[0]["explain"]

    # a failed attempt (too few decided posts) is logged and changes nothing
    with pytest.raises(BadInput, match="decided posts"):
        learn_reranker(reranker_parts(services), tenants["few"], LearnOptions(reference=reference))
    assert services.champions.attempts(tenants["few"])[0]["failed"]
    assert services.champions.get(tenants["a"])["version"] == report["version"]

    back = services.champions.rollback(tenants["a"])
    assert back == {**back, "rolled_back": report["version"], "serving": "packaged"}
    assert services.champions.get(tenants["a"]) is None
    assert services.matcher(CONFIG, rerank=True, tenant=tenants["a"]).reranker is packaged
    with pytest.raises(NotFound):
        services.champions.rollback(tenants["a"])
