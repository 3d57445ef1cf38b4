"""Language centering of the query vector (pure: hand-checked vectors, no server)."""
import numpy as np
import pytest

from plugin.search.centering import LanguageCentroids, center_query, centroids_body, read_centroids
from plugin.search.matcher import Matcher, MatchRequest
from plugin.models import Mode
from plugin.search.retrieval import retrieval_config
from plugin.settings import Settings
from tests.stub_embedder import StubEmbedder


def response(buckets):
    return {"aggregations": {"sample": {"langs": {"buckets": [
        {"key": lang, "doc_count": n, "centroid": {"value": {"n": n, "sum": s}}} for lang, n, s in buckets]}}}}


def test_read_centroids_means_and_the_overall_mean():
    got = read_centroids(response([("en", 10, [10.0, 0.0]), ("ko", 5, [0.0, 5.0]), ("xx", 2, [2.0, 2.0])]))
    assert got.counts == {"en": 10, "ko": 5, "xx": 2}
    assert set(got.centroids) == {"en", "ko"}  # xx: fewer than MIN_DOCS, no centroid
    np.testing.assert_allclose(got.centroids["en"], [1.0, 0.0])
    np.testing.assert_allclose(got.centroids["ko"], [0.0, 1.0])
    np.testing.assert_allclose(got.mean, [12 / 17, 7 / 17])  # every sampled fact-check counts
    assert read_centroids({"aggregations": {}}) == LanguageCentroids()


def test_center_query_subtracts_the_language_s_offset_and_normalises():
    c = LanguageCentroids(centroids={"ko": np.array([0.0, 1.0])}, mean=np.array([0.5, 0.5]))
    q = np.array([0.6, 0.8])
    # q - 0.5 * ([0, 1] - [0.5, 0.5]) = [0.85, 0.55], normalised
    expected = np.array([0.85, 0.55]) / np.hypot(0.85, 0.55)
    np.testing.assert_allclose(center_query(q, "ko", c, 0.5), expected, rtol=1e-6)
    np.testing.assert_allclose(center_query(q, "en", c, 0.5), q)  # no centroid: unchanged
    np.testing.assert_allclose(center_query(q, "ko", c, 0.0), q)
    assert q.tolist() == [0.6, 0.8]  # a new array


def test_the_aggregation_samples_per_language():
    body = centroids_body(per_language=300)
    sampler = body["aggs"]["sample"]["diversified_sampler"]
    assert sampler["field"] == "lang" and sampler["max_docs_per_value"] == 300 and body["size"] == 0
    metric = body["aggs"]["sample"]["aggs"]["langs"]["aggs"]["centroid"]["scripted_metric"]
    assert metric["params"] == {"field": "embedding"}


@pytest.mark.parametrize("mode, centred", [(Mode.AUTO, True), (Mode.CROSS, True), (Mode.MONO, False)])
def test_the_matcher_centres_dense_queries_across_languages_only(mode, centred):
    cfg = retrieval_config("factsieve")
    assert cfg.language_centering == 0.5
    c = LanguageCentroids(centroids={"ko": np.array([0.0, 1.0, 0.0])}, mean=np.array([0.0, 0.5, 0.0]))
    matcher = Matcher(store=None, embedder=StubEmbedder(), settings=Settings(), config=cfg)
    bodies, _ = matcher.plan(MatchRequest(text="abc", mode=mode), "abc", "ko", cfg, centroids=c)
    vector = bodies["dense:post"]["query"]["knn"]["embedding"]["vector"]
    plain = np.array([3.0, 1.0, 0.0])  # the stub's vector for "abc"
    want = (plain - 0.5 * np.array([0.0, 0.5, 0.0])) if centred else plain
    if centred:
        want = want / np.linalg.norm(want)
    np.testing.assert_allclose(vector, want, rtol=1e-6)
