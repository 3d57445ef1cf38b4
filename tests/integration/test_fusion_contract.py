"""One contract, two fusion paths: client-side (``_msearch`` + ``plugin.search.fuse``) and server-side
(``hybrid`` query + neural-search pipeline) must rank the same candidates the same way.

The local cluster is built from Maven Central, where the neural-search plugin is not published,
so the server-side path runs only against a cluster that has it (e.g. the official Docker image:
FACTSIEVE_OPENSEARCH_URL=… make test). Here it is skipped with that reason; the client path and
the planner's refusals always run.
"""
import pytest

from plugin.search.hybrid import NEURAL_PLUGIN
from plugin.search.matcher import Matcher, MatchRequest
from plugin.models import Mode
from plugin.search.retrieval import RetrievalConfig

pytestmark = pytest.mark.integration

CASES = [
    ("minmax 0.3/0.7", {"fusion": "minmax", "retrievers": [{"kind": "bm25", "weight": 0.3},
                                                           {"kind": "dense", "weight": 0.7}]}),
    ("rrf equal", {"fusion": "rrf", "retrievers": [{"kind": "bm25"}, {"kind": "dense"}]}),
]
POSTS = ["Covid-19 vaccines alter human DNA", "Merck scraps COVID vaccines",
         "Photo shows anti-lockdown protest in Austria"]


def ranking(store, embedder, settings, alias, body, server: bool, text: str) -> list[str]:
    s = settings.model_copy(update={"server_fusion": server})
    cfg = RetrievalConfig.model_validate({**body, "name": "contract", "candidates": 50})
    result = Matcher(store, embedder, s, alias=alias, config=cfg).match(
        MatchRequest(text=text, lang="en", mode=Mode.CROSS, k=10))
    return [m["id"] for m in result.matches]


@pytest.mark.parametrize("label, body", CASES)
@pytest.mark.parametrize("path", ["client", "server"])
def test_same_ranking_on_both_paths(store, embedder, settings, sample_alias, label, body, path):
    if path == "server" and NEURAL_PLUGIN not in store.plugins():
        pytest.skip("neural-search is not installed (not on Maven Central); client-side fusion only")
    for text in POSTS:
        client = ranking(store, embedder, settings, sample_alias, body, False, text)
        got = ranking(store, embedder, settings, sample_alias, body, path == "server", text)
        assert got == client and len(client) == 10
