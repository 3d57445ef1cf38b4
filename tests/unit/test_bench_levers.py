"""The bench's query-time levers: each variant differs from the served BM25 body in one thing."""
from plugin.lab.bench_levers import PREFIXES, bm25_variants, prefix_words
from plugin.search.queries import bm25_query


def test_prefix_words_keeps_the_first_n_words():
    assert prefix_words("a b  c d", 2) == "a b"
    assert prefix_words("a", 5) == "a"
    assert prefix_words("", 3) == ""


def test_the_served_body_is_the_live_one_and_each_lever_changes_one_thing():
    text = " ".join(f"w{i}" for i in range(40))
    out = bm25_variants(text, "en")
    served = bm25_query(text, lang="en", filters=None, size=50)
    assert out["as-served"] == served
    assert out["count-all"] == {**served, "track_total_hits": True}
    for n in PREFIXES:
        q = out[f"prefix-{n}"]["query"]["bool"]["must"][0]["multi_match"]
        assert q["query"] == " ".join(f"w{i}" for i in range(n))
        assert q["fields"] == served["query"]["bool"]["must"][0]["multi_match"]["fields"]
    fields = out["i18n-only"]["query"]["bool"]["must"][0]["multi_match"]["fields"]
    assert fields and all("_i18n." in f for f in fields)


def test_a_language_without_analysed_fields_has_no_i18n_variant():
    assert "i18n-only" not in bm25_variants("some words here", None)
