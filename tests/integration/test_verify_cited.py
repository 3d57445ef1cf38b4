"""The cited strategy against the real parts: an evidence index in OpenSearch with passages
dated after the claim, one on the claim's own fact-check and near-duplicates, and the packaged
verdict head. No LLM anywhere: the strategy must not need one.

These tests assert the constraints and the shape — every statement cites a passage it shows,
nothing after the claim date, nothing from the excluded page — never that a verdict is right.
"""
from __future__ import annotations

import json
from datetime import date

import numpy as np
import pytest

from plugin.verify.config import verification_config
from plugin.verify.steps import LABELS
from plugin.verify.verifier import Verifier, VerifyRequest
from tests.integration.conftest import poll_job
from tests.integration.test_verify import CLAIM, CLAIM_DAY, DOCS, LATER, OWN_FACT_CHECK
from tests.integration.test_verify import evidence_alias  # noqa: F401 - the API's evidence

pytestmark = pytest.mark.integration

SYNDICATED = "Health agencies say radio waves from 5G masts cannot carry or spread the coronavirus."
MORE_DOCS = DOCS + [
    {"url": "https://wire.example.net/5g-virus", "title": "5G and the virus", "text": SYNDICATED,
     "published_at": "2020-04-20"},
    {"url": "https://paper.example.net/5g-virus-copy", "title": "5G and the virus", "text": SYNDICATED,
     "published_at": "2020-04-21"},
    {"url": "https://later.example.org/masts", "title": "Masts and the coronavirus, a year on",
     "text": "A year later, 5G masts still have not spread the coronavirus.", "published_at": "2021-06-01"},
]


@pytest.fixture
def cited_alias(make_alias, api_services):
    from plugin.evidence import ensure_evidence_index, ingest_evidence, parse

    svc, alias = api_services, make_alias()
    ensure_evidence_index(svc.store, svc.settings, svc.embedder, alias)
    report = ingest_evidence(parse([json.dumps(d) for d in MORE_DOCS], "docs"), store=svc.store,
                             embedder=svc.embedder, index=alias)
    assert report.rejected == 0, report.rejects
    return alias


def verifier_on(api_services, alias, cfg) -> Verifier:
    """The parts ``Verification.verifier`` gives the configuration, reading ``alias``'s evidence."""
    from plugin.evidence.retrieve import EvidenceRetriever

    base = api_services.verification.verifier(cfg, "default")
    return Verifier(llm=base.llm, head=base.head, evidence=EvidenceRetriever(
        api_services.store, api_services.embedder, api_services.settings, alias=alias,
        max_per_url=cfg.per_url))


def no_lookup(name: str, **changes):
    return verification_config(name).model_copy(update={"lookup_min_score": None, "lookup_min_confidence": None,
                                               **changes})


def test_services_give_the_cited_strategy_the_verdict_model_and_evidence_but_no_llm(api_services):
    cfg = verification_config("cited")
    v = api_services.verification.verifier(cfg, "default")
    assert v.llm is None and v.head is not None and v.evidence.max_per_url == cfg.per_url
    assert v.lookup is not None  # the previously-fact-checked lookup runs first


def test_evidence_vectors_are_the_stored_embeddings(api_services, cited_alias):
    from plugin.evidence import EvidenceQuery
    from plugin.evidence.passages import embedding_text
    from plugin.evidence.retrieve import EvidenceRetriever

    svc = api_services
    got = EvidenceRetriever(svc.store, svc.embedder, svc.settings, alias=cited_alias).search(
        EvidenceQuery(text=CLAIM, k=6, vectors=True))
    assert np.allclose(got.query_vector, svc.embedder.encode_queries([CLAIM])[0], atol=1e-5)
    titles = {d["url"]: d["title"] for d in MORE_DOCS}
    expected = svc.embedder.encode_passages([embedding_text(titles[p["url"]], p["text"]) for p in got.passages])
    # the embedder's int8 ONNX model quantises activations per batch, so a vector embedded again
    # in another batch is close (cosine > 0.99) but not equal: each passage carries its own
    cos = np.asarray([p["embedding"] for p in got.passages]) @ np.asarray(expected).T
    texts = [p["text"] for p in got.passages]
    assert (np.diag(cos) > 0.99).all() and [texts[j] for j in cos.argmax(axis=1)] == texts
    plain = EvidenceRetriever(svc.store, svc.embedder, svc.settings, alias=cited_alias).search(
        EvidenceQuery(text=CLAIM, k=6))
    assert plain.query_vector is None and all("embedding" not in p for p in plain.passages)


@pytest.mark.parametrize("mmr_lambda", [None, 0.7])
def test_cited_answer_cites_only_passages_it_shows_from_before_the_claim(api_services, cited_alias, mmr_lambda):
    cfg = no_lookup("cited", mmr_lambda=mmr_lambda, passages=3, candidates=10)
    req = VerifyRequest(claim=CLAIM, date=CLAIM_DAY, exclude_urls=(OWN_FACT_CHECK,))
    out = verifier_on(api_services, cited_alias, cfg).verify(req, cfg).to_dict()
    head_cfg = verification_config("head").model_copy(update={"passages": 3})
    head = verifier_on(api_services, cited_alias, head_cfg).verify(req, head_cfg).to_dict()

    assert set(head) | {"evidence_form", "statements"} <= set(out)  # the head's shape, and more
    assert out["evidence_form"] == "passages" and out["stage"] == "cited"
    assert out["stopped_because"] == "passages" and out["verdict_source"] == "head"
    assert out["verdict"] in LABELS and set(out["label_scores"]) == set(LABELS)
    assert out["tokens"] == {"prompt": 0, "completion": 0, "calls": 0}  # no LLM
    pairs = out["qa_pairs"]
    assert 1 <= len(pairs) <= 3
    for p in pairs:
        assert p["answer_kind"] == "passage" and p["question"] == CLAIM
        assert p["stance"] in ("supports", "refutes", "neither") and p["stance_strength"] >= 0
        assert set(p) == {"question", "answer", "answer_kind", "source_url", "passage_id", "stance",
                          "stance_strength"}
    assert out["statements"], "a cited answer always says something, citing its passages"
    for st in out["statements"]:
        assert st["sources"] and all(1 <= n <= len(pairs) for n in st["sources"])
        assert "".join(f"[{', '.join(map(str, st['sources']))}]") in out["justification"]
    cited = {c["url"] for c in out["citations"]} | {p["source_url"] for p in pairs}
    assert cited <= {d["url"] for d in MORE_DOCS}
    dated = {d["url"]: d["published_at"] for d in MORE_DOCS}
    assert OWN_FACT_CHECK not in cited and LATER not in cited
    assert all(date.fromisoformat(dated[u]) < CLAIM_DAY for u in cited)
    if mmr_lambda is not None:  # the syndicated copy is a near-duplicate: MMR keeps one of the two
        kept = [p["source_url"] for p in pairs]
        assert not {"https://wire.example.net/5g-virus", "https://paper.example.net/5g-virus-copy"} <= set(kept)


def test_factsieve_verify_config_cited_prints_stances(api_services, cited_alias, make_alias, monkeypatch, capsys):
    from cli.main import main

    monkeypatch.setenv("FACTSIEVE_EVIDENCE_INDEX", cited_alias)
    monkeypatch.setenv("FACTSIEVE_INDEX", make_alias())  # no fact-checks: the lookup is skipped
    argv = ["verify", CLAIM, "--date", CLAIM_DAY.isoformat(), "--exclude-url", OWN_FACT_CHECK,
            "--config", "cited"]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stage"] == "cited" and out["qa_pairs"] and any("lookup skipped" in n for n in out["notes"])
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "[1] " in printed and any(f"[1] {s} (" in printed for s in ("supports", "refutes", "neither"))
    assert "justification: " in printed and "verdict source: head" in printed


def test_verify_job_with_the_cited_configuration(client, auth, worker, evidence_alias):  # noqa: F811
    # the API corpus's fact-check of this claim is excluded too: the lookup runs first and would
    # answer with it (as it should), and this is about the cited answer
    resp = client.post("/v1/verify", headers=auth, json={
        "claim": CLAIM, "date": CLAIM_DAY.isoformat(), "config": "cited",
        "exclude_urls": [OWN_FACT_CHECK, "https://checks.example.org/5g-coronavirus"]})
    assert resp.status_code == 202, resp.data
    job = poll_job(client, auth, resp.get_json()["job_id"], timeout=120)
    assert job["status"] == "succeeded", job
    result = job["result"]
    assert result["config"] == "cited" and result["evidence_form"] == "passages"
    assert result["qa_pairs"] and all(p["source_url"] not in (OWN_FACT_CHECK, LATER) for p in result["qa_pairs"])
