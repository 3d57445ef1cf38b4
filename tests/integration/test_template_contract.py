"""The model inside OpenSearch, and what tools that talk to OpenSearch directly get from it.

``factsieve init`` (``Deployment.host_model``) hosts the embedding model in ML Commons; then

- the stored template ``factsieve-match`` must rank as ``factsieve match`` does for its
  configuration (top 10, up to exactly tied documents), in every mode and under date filters;
- a fact-check written without a vector by any tool gets the vector FactSieve's own ingest
  would give it (default ingest pipeline), and one written with a vector keeps it.

Both sides embed with the fp32 graph here: ML Commons runs its own onnxruntime, whose int8
kernels differ from ours (cosine ~0.998), while its fp32 agrees to ~1e-7. `make up` installs ML
Commons; FACTSIEVE_OS_ML=0 leaves it out, and only then are these tests skipped.
"""
import os
from datetime import date
import uuid

import numpy as np
import pytest

from plugin.embedding import load_embedder
from plugin.index.hosted import ML_PLUGIN
from plugin.ingest.formats import RawRecord
from plugin.ingest.pipeline import embed_factchecks
from plugin.models import FactCheck, Mode
from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.normalize import normalize_post
from plugin.service.services import Services
from tests.conftest import SAMPLES, _cleanup, ingest_files

pytestmark = pytest.mark.integration

POSTS = ["Covid-19 vaccines alter human DNA", "Merck scraps COVID vaccines",
         "Photo shows anti-lockdown protest in Austria",
         "@WHO says 5G towers spread the coronavirus https://t.co/x1 #covid",
         "Las vacunas contra el covid contienen grafeno"]
FP32 = "onnx/model.onnx"


@pytest.fixture(scope="module")
def hosted(store, settings):
    if ML_PLUGIN not in store.plugins():
        if os.environ.get("FACTSIEVE_OS_ML") == "0":
            pytest.skip("FACTSIEVE_OS_ML=0: the cluster was started without ML Commons")
        pytest.fail("ML Commons is not installed: `make up` installs it (FACTSIEVE_OS_ML=0 leaves it out)")
    alias = f"fs-test-hosted-{uuid.uuid4().hex[:8]}"
    s = settings.model_copy(update={"index": alias, "embedding_onnx_file": FP32,
                                    "search_template": f"{alias}-match"})
    services = Services(s, store=store, embedder=load_embedder(s))
    report = ingest_files(store, services.embedder, alias,
                          [SAMPLES / "clef2020" / "factchecks.jsonl",
                           SAMPLES / "multiclaim" / "factchecks.jsonl"], s)
    assert report.rejected == 0, report.rejects
    services.deployment.search_pipelines([services.config(s.template_config)])
    info = services.admin().deployment.host_model()
    yield services, info
    # the fp32 model stays registered (the next run reuses it) but gives its memory back
    store.request("undeploy model", "POST", f"/_plugins/_ml/models/{info['model_id']}/_undeploy")
    store.request("delete template", "DELETE", f"/_scripts/{s.search_template}")
    _cleanup(store, alias)
    store.request("delete pipeline", "DELETE", f"/_ingest/pipeline/{alias}-embed")


def same_up_to_near_ties(got, want, tol=1e-4):
    """Scores within ``tol`` position by position, and the same documents in every run of
    near-tied scores but the last (which the top-k cut may split differently). The template's
    query vector comes from ML Commons' onnxruntime (fp32: cosine ~1 - 1e-7 to ours), and
    min-max normalisation turns that into score differences of a few 1e-6."""
    if len(got) != len(want) or any(abs(g[1] - w[1]) > tol for g, w in zip(got, want)):
        return False
    runs: list[list[str]] = []
    last = None
    for doc, score in want:
        if last is not None and abs(last - score) <= tol:
            runs[-1].append(doc)
        else:
            runs.append([doc])
        last = score
    start = 0
    for k, run in enumerate(runs):
        if k < len(runs) - 1 and {d for d, _ in got[start:start + len(run)]} != set(run):
            return False
        start += len(run)
    return True


def test_near_ties_are_read_as_ties():
    want = [("a", 0.9), ("b", 0.5), ("c", 0.49999), ("d", 0.1)]
    assert same_up_to_near_ties([("a", 0.9), ("c", 0.5), ("b", 0.5), ("d", 0.1)], want)
    assert not same_up_to_near_ties([("b", 0.9), ("a", 0.9), ("c", 0.5), ("d", 0.1)], want)
    assert not same_up_to_near_ties([("a", 0.9), ("b", 0.4), ("c", 0.5), ("d", 0.1)], want)
    assert same_up_to_near_ties([("a", 0.9), ("b", 0.5), ("c", 0.5), ("e", 0.1)], want)


def template_ranking(services, params):
    resp = services.store.request("search template", "POST",
                                  f"/{services.settings.index}/_search/template",
                                  {"id": services.settings.search_template, "params": params})
    return [(h["_source"]["id"], round(h["_score"], 6)) for h in resp["hits"]["hits"]]


def match_ranking(services, text, **req):
    s = services.settings
    matcher = Matcher(services.store, services.embedder, s, config=s.template_config)
    result = matcher.match(MatchRequest(text=text, k=10, **req))
    assert result.fusion == "client"
    return [(m["id"], round(m["score"], 6)) for m in result.matches]


def test_init_records_the_hosted_model(hosted, store):
    services, info = hosted
    assert info["onnx_file"] == "model.onnx" and info["search_template"]["config"] == "minmax"
    meta = store.mapping_meta(info["index"])["factsieve"]
    assert meta["hosted_model"]["model_id"] == info["model_id"]
    settings = store.client.indices.get_settings(index=info["index"])[info["index"]]["settings"]
    assert settings["index"]["default_pipeline"] == info["ingest_pipeline"]
    again = services.admin().deployment.host_model()  # idempotent: the same model, not a second upload
    assert again["model_id"] == info["model_id"]


@pytest.mark.parametrize("mode, lang, dates", [
    ("cross", None, {}),
    ("cross", "en", {}),
    ("mono", "en", {}),
    ("mono", "en", {"date_to": "2020-06-01"}),
    ("cross", "en", {"date_to": "2021-06-01", "within_days": 365}),
])
def test_template_ranks_as_factsieve_match(hosted, mode, lang, dates):
    services, _ = hosted
    for post in POSTS:
        params = {"query_text": normalize_post(post), "k": 10, "mode": mode, **dates}
        if lang:
            params["lang"] = lang
        req = {"mode": Mode(mode), "lang": lang or "xx"}  # xx: no analysed fields, as without lang
        if "date_to" in dates:
            req["date"] = date.fromisoformat(dates["date_to"])
        if "within_days" in dates:
            req["within_days"] = dates["within_days"]
        want = match_ranking(services, post, **req)
        got = template_ranking(services, params)
        assert want and same_up_to_near_ties(got, want), (post, mode, lang, dates, got, want)


def test_documents_written_without_a_vector_get_factsieves(hosted, store):
    services, _ = hosted
    alias = services.settings.index
    doc = {"id": "ext-1", "claim": "Drinking hot water cures the coronavirus",
           "title": "No, hot water does not cure COVID-19", "lang": "en",
           "url": "https://example.org/ext-1"}
    store.client.index(index=alias, id="ext-1", body=doc, refresh="wait_for")
    got = store.search(alias, {"query": {"ids": {"values": ["ext-1"]}}, "_source": True,
                               "script_fields": {"v": {"script": "doc['embedding'].getValue()"}}})
    hit = got["hits"]["hits"][0]
    assert hit["_source"]["claim_i18n"] == {"en": doc["claim"]} and "ingested_at" in hit["_source"]
    vector = np.array(hit["fields"]["v"][0])
    want = embed_factchecks(services.embedder, [FactCheck.model_validate(doc)])[0]
    assert float(vector @ want) > 0.99999
    # the template finds it by meaning, as a match would
    top = template_ranking(services, {"query_text": "does hot water kill covid", "k": 3})
    assert top[0][0] == "ext-1"


def test_documents_with_a_vector_keep_it(hosted, store):
    services, _ = hosted
    alias = services.settings.index
    vector = [0.0] * services.embedder.dim
    vector[0] = 1.0
    store.client.index(index=alias, id="ext-2", refresh="wait_for",
                       body={"id": "ext-2", "claim": "A claim with its own vector", "lang": "en",
                             "url": "https://example.org/ext-2", "embedding": vector})
    got = store.search(alias, {"query": {"ids": {"values": ["ext-2"]}},
                               "script_fields": {"v": {"script": "doc['embedding'].getValue()"}}})
    assert got["hits"]["hits"][0]["fields"]["v"][0] == pytest.approx(vector)


def test_factsieve_ingest_leaves_vectors_to_the_hosted_model(hosted, store):
    """``FACTSIEVE_INGEST_EMBEDDING=auto`` on an index with the model hosted: FactSieve's own
    ingest sends no vector and the pipeline computes the one it would have."""
    services, _ = hosted
    assert services.factchecks.embeds_here() is False
    doc = {"id": "own-1", "claim": "Bananas cure malaria", "title": "No, bananas do not cure malaria",
           "lang": "en", "url": "https://example.org/own-1"}
    report = services.factchecks.ingest([RawRecord(ref="r1", data=doc)])
    assert report.to_dict() == {"indexed": 1, "updated": 0, "rejected": 0, "rejects": []}
    vector = np.array(vector_of(store, services.settings.index, "own-1"))
    want = embed_factchecks(services.embedder, [FactCheck.model_validate(doc)])[0]
    assert float(vector @ want) > 0.99999


def test_ingest_embeds_here_what_the_pipeline_fails_on(hosted, store):
    """Runs last: with the model undeployed the pipeline fails every document; each is embedded
    here and sent again, so nothing is lost and nothing is reported rejected."""
    services, info = hosted
    store.request("undeploy", "POST", f"/_plugins/_ml/models/{info['model_id']}/_undeploy")
    doc = {"id": "own-2", "claim": "Garlic prevents covid", "lang": "en", "url": "https://example.org/own-2"}
    report = services.factchecks.ingest([RawRecord(ref="r2", data=doc)])
    assert report.to_dict() == {"indexed": 1, "updated": 0, "rejected": 0, "rejects": []}
    vector = np.array(vector_of(store, services.settings.index, "own-2"))
    want = embed_factchecks(services.embedder, [FactCheck.model_validate(doc)])[0]
    assert float(vector @ want) == pytest.approx(1.0, abs=1e-6)


def vector_of(store, alias, doc_id):
    got = store.search(alias, {"query": {"ids": {"values": [doc_id]}},
                               "script_fields": {"v": {"script": "doc['embedding'].getValue()"}}})
    return got["hits"]["hits"][0]["fields"]["v"][0]
