"""One match path (``plugin.service.matching.match_post``): the same post, tenant and budget give
the same answer on every path that matches — the HTTP route, the post job (what webhooks and the
desk get), the rerank job, the verification lookup, the desk's manual search and the CLI — and
the tenant's learning applies on each of them.

Over a deployment of its own: the sample CLEF-2020 fact-checks (English, so the English-trained
reranker serves) and a live rerank budget large enough that nothing is cut, as a job has none."""
from __future__ import annotations

import json
import uuid

import pytest

from cli.main import main
from plugin.search.request import MatchRequest
from plugin.service.handlers import run_post, run_rerank
from plugin.service.matching import match_post
from tests.conftest import SAMPLES
from tests.integration.conftest import cleanup_deployment, namespaced, settings_env

pytestmark = pytest.mark.integration

POSTS = [json.loads(line) for line in (SAMPLES / "clef2020" / "queries.jsonl").read_text().splitlines()[:4]]
TENANT = "paths"


@pytest.fixture(scope="module")
def paths(settings, store, embedder):
    from plugin.ingest import Format, read_records
    from plugin.service.services import Services

    s = namespaced(settings, uuid.uuid4().hex[:10], rerank_budget_ms=60_000.0)
    services = Services(s, store=store, embedder=embedder)
    report = services.factchecks.ingest(read_records([SAMPLES / "clef2020" / "factchecks.jsonl"], Format.jsonl))
    assert report.rejected == 0
    yield services
    cleanup_deployment(s, store)


@pytest.fixture(scope="module")
def api(paths):
    from api import create_app
    from plugin.service.keys import Scope

    key = paths.keys.create("paths", Scope.WRITE, TENANT)[1]
    client, headers = create_app(paths.settings, services=paths).test_client(), {"Authorization": f"Bearer {key}"}
    # a live matcher's first reranked request measures what a pair costs, reranking only a probe's
    # few pairs (``rerank.pairs_within``); later ones fit the budget: warm it, as a server's first
    # request does
    assert client.post("/v1/match", json={"text": "warm-up", "rerank": True, "config": "hybrid-rerank"},
                       headers=headers).status_code == 200
    return client, headers


def answers(match: dict) -> list[tuple]:
    """What a path answered: each match's id, rank, scores, confidence, why and what learning said."""
    return [(m["id"], m["rank"], m["score"], m["confidence"], json.dumps(m.get("explain"), sort_keys=True),
             m.get("reason"), m.get("confidence_packaged")) for m in match["matches"]]


def differences(got: dict[str, list]) -> dict[str, list]:
    first = got["post job"]
    return {k: [(i, a, b) for i, (a, b) in enumerate(zip(v, first)) if a != b][:2] + [len(v), len(first)]
            for k, v in got.items() if v != first}


def every_path(services, client, headers, monkeypatch, capsys, text: str, tag: str) -> dict[str, list]:
    post = {"id": f"{tag}-{uuid.uuid4().hex[:6]}", "text": text, "lang": "en"}
    got = {}
    resp = client.post("/v1/match", json={"text": text, "lang": "en", "rerank": True, "config": "hybrid-rerank"},
                       headers=headers)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    got["api"] = answers(resp.get_json())
    got["post job"] = answers(run_post(services, {"id": f"job-{post['id']}", "tenant": TENANT,
                                                  "input": {"post": post}}, lambda d: None)["match"])
    got["rerank job"] = answers(run_rerank(services, {"id": "j", "tenant": TENANT,
                                                      "input": {"text": text, "lang": "en"}}))
    for name, value in settings_env(services.settings).items():
        if name.startswith("FACTSIEVE_"):
            monkeypatch.setenv(name, value)
    assert main(["match", text, "--lang", "en", "--json", "--rerank", "--config", "hybrid-rerank",
                 "--tenant", TENANT]) == 0
    got["cli"] = answers(json.loads(capsys.readouterr().out))
    got["match_post"] = answers(match_post(services.matching, MatchRequest(text=text, lang="en"), TENANT,
                                           config="hybrid-rerank").to_dict())
    return got


def test_every_path_gives_the_same_reranked_answer_with_the_tenants_learning(paths, api, monkeypatch, capsys):
    client, headers = api
    for q in POSTS:
        got = every_path(paths, client, headers, monkeypatch, capsys, q["text"], q["id"])
        first = got["post job"]
        assert first and all(v == first for v in got.values()), differences(got)
        # the verification lookup (its configuration's retrieval, five asked): what the API says
        cfg = paths.verification.config("lookup")
        looked = paths.verification.verifier(cfg, TENANT).lookup(MatchRequest(text=q["text"], lang="en", k=5))
        api_says = client.post("/v1/match", json={"text": q["text"], "lang": "en", "k": 5, "config": cfg.retrieval},
                               headers=headers).get_json()
        assert answers(looked.to_dict()) == answers(api_says)
    # the post job reranks by default now: what webhooks and the desk get is the best ranking,
    # every head but those the first stage is sure of (``rerank.skip_at``), which keep its order
    items = [paths.review.item(TENANT, i.post_id) for i in paths.review.queue(TENANT, limit=50).items]
    assert items and all(i.versions["retrieval_config"] == "hybrid-rerank" for i in items)
    assert any(i.versions["reranker"] for i in items), [i.versions for i in items]
    # the desk says a candidate: a re-post of the same text gets it first on every path
    text, posted = POSTS[0]["text"], paths.review.queue(TENANT, limit=50).items
    mine = next(i for i in posted if i.text == text)
    chosen = mine.candidates[1].factcheck_id
    paths.review.decide(TENANT, "ana", [{"post_id": mine.post_id, "action": "confirm", "factcheck_id": chosen,
                                        "version": mine.version}])
    got = every_path(paths, client, headers, monkeypatch, capsys, text, "again")
    for name, answer in got.items():
        assert answer[0][0] == chosen and answer[0][5] == "confirmed-by-desk", name
    assert all(v == got["post job"] for v in got.values())


def test_the_desks_manual_search_is_the_live_default_answer(paths, api):
    client, headers = api
    text = POSTS[1]["text"]
    resp = client.post("/v1/match", json={"text": text}, headers=headers).get_json()
    found = paths.review.search_factchecks(TENANT, text, k=10)
    assert [f["factcheck_id"] for f in found] == [m["id"] for m in resp["matches"]]
