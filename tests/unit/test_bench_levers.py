"""The bench's query-time levers: each variant differs from the served BM25 body in one thing."""
from plugin.lab.bench_levers import PREFIXES, bm25_variants, prefix_words
from plugin.search.queries import bm25_query


def test_prefix_words_keeps_the_first_n_words():
    assert prefix_words("a b  c d", 2) == "a b"
    assert prefix_words("a", 5) == "a"
    assert prefix_words("", 3) == ""


def _match(body):
    return body["query"]["bool"]["must"][0]


def test_the_served_body_is_the_live_one_and_each_lever_changes_one_thing():
    text = "the claim that " + " ".join(f"w{i}" for i in range(40))
    out = bm25_variants(text, "en")
    served = bm25_query(text, lang="en", filters=None, size=50)
    assert out["as-served"] == served and "rescore" in served and served["track_total_hits"] is True
    assert out["skip-blocks"] == {**served, "track_total_hits": False}
    unsplit = out["unsplit"]
    assert "rescore" not in unsplit and unsplit["track_total_hits"] is True
    assert _match(unsplit)["multi_match"]["fields"] == ["claim_i18n.en^2", "title_i18n.en", "claim^2", "title"]
    assert out["unsplit-skip-blocks"] == {**unsplit, "track_total_hits": False}
    for n in PREFIXES:
        words = " ".join(["the", "claim", "that", *(f"w{i}" for i in range(n - 3))])
        assert out[f"prefix-{n}"] == bm25_query(words, lang="en", filters=None, size=50)
    fields = _match(out["i18n-only"])["multi_match"]["fields"]
    assert fields and all("_i18n." in f for f in fields)


def test_a_language_without_analysed_fields_has_no_i18n_variant():
    assert "i18n-only" not in bm25_variants("some words here", None)
