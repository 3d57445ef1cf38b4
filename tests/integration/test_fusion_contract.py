"""One contract, two fusion paths: client-side (``_msearch`` + ``plugin.search.fuse``) and server-side
(``hybrid`` query + neural-search pipeline) must rank the same candidates the same way.

`make up` installs the neural-search plugin (Maven Central, ``org.opensearch.plugin:neural-search``),
so both halves run. Scores must agree; the order may differ only inside a group of exactly tied
documents (the client breaks ties by best rank then id, OpenSearch by index order).
"""
import math
import os
from itertools import groupby

import pytest

from plugin.models import Mode
from plugin.search.hybrid import NEURAL_PLUGIN, config_pipelines
from plugin.search.matcher import Matcher, MatchRequest
from plugin.search.retrieval import RetrievalConfig

pytestmark = pytest.mark.integration

CASES = [
    ("minmax 0.3/0.7", {"fusion": "minmax", "retrievers": [{"kind": "bm25", "weight": 0.3},
                                                           {"kind": "dense", "weight": 0.7}]}),
    ("rrf equal", {"fusion": "rrf", "retrievers": [{"kind": "bm25"}, {"kind": "dense"}]}),
]
POSTS = ["Covid-19 vaccines alter human DNA", "Merck scraps COVID vaccines",
         "Photo shows anti-lockdown protest in Austria"]


def contract_config(body: dict) -> RetrievalConfig:
    return RetrievalConfig.model_validate({**body, "name": "contract", "candidates": 50})


def ranking(store, embedder, settings, alias, body, server: bool, text: str):
    s = settings.model_copy(update={"server_fusion": server})
    result = Matcher(store, embedder, s, alias=alias, config=contract_config(body)).match(
        MatchRequest(text=text, lang="en", mode=Mode.CROSS, k=10))
    # OpenSearch scores are float32: six decimals are what both paths share
    return result.fusion, [(m["id"], round(m["score"], 6)) for m in result.matches]


def tie_groups(ranked: list[tuple[str, float]]) -> list[tuple[float, frozenset[str]]]:
    return [(score, frozenset(doc for doc, _ in group))
            for score, group in groupby(ranked, key=lambda pair: pair[1])]


def same_up_to_ties(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """Equal scores position by position, and equal members in every tie group but the last
    (which the top-k cut may split differently)."""
    ga, gb = tie_groups(a), tie_groups(b)
    return (len(a) == len(b) and all(math.isclose(x, y, abs_tol=2e-6) for (_, x), (_, y) in zip(a, b))
            and [g for _, g in ga[:-1]] == [g for _, g in gb[:-1]])


@pytest.fixture(scope="module")
def neural(store):
    if NEURAL_PLUGIN not in store.plugins():
        if os.environ.get("FACTSIEVE_OS_NEURAL") == "0":
            pytest.skip("FACTSIEVE_OS_NEURAL=0: the cluster was started without neural-search")
        pytest.fail("neural-search is not installed: `make up` installs it (FACTSIEVE_OS_NEURAL=0 leaves it out)")
    for _, body in CASES:
        for name, pipeline in config_pipelines([contract_config(body)]).items():
            store.put_search_pipeline(name, pipeline)
    return store


def test_same_up_to_ties_reads_tie_groups():
    a = [("x", 0.5), ("y", 0.4), ("z", 0.4), ("w", 0.1)]
    assert same_up_to_ties(a, [("x", 0.5), ("z", 0.4), ("y", 0.4), ("w", 0.1)])
    assert not same_up_to_ties(a, [("x", 0.5), ("y", 0.4), ("w", 0.4), ("z", 0.1)])
    assert same_up_to_ties([("x", 0.5), ("y", 0.4)], [("x", 0.5), ("z", 0.4)])  # cut inside the last tie


@pytest.mark.parametrize("label, body", CASES)
def test_same_ranking_on_both_paths(neural, embedder, settings, sample_alias, label, body):
    for text in POSTS:
        client_path, client = ranking(neural, embedder, settings, sample_alias, body, False, text)
        server_path, server = ranking(neural, embedder, settings, sample_alias, body, True, text)
        assert (client_path, server_path) == ("client", "server")
        assert len(client) == 10 and same_up_to_ties(server, client), (text, server, client)


def test_a_match_never_installs_a_pipeline(store, embedder, settings, sample_alias):
    body = {"fusion": "minmax", "retrievers": [{"kind": "bm25", "weight": 0.11},
                                               {"kind": "dense", "weight": 0.89}]}
    (name, _), = config_pipelines([contract_config(body)]).items()
    before = store.search_pipelines()
    assert name not in before
    path, got = ranking(store, embedder, settings, sample_alias, body, True, POSTS[0])
    assert path == "client" and len(got) == 10  # not installed: fused client-side
    assert store.search_pipelines() == before
