"""BM25 selects candidates without the neutral fields' stop words and adds them back by a rescore:
the two clauses together are the one match they replace."""
import pytest

from plugin.evidence.retrieve import bm25_body
from plugin.search.queries import BM25_RESCORE_DEPTH, bm25_clauses, bm25_query, whole_query
from plugin.search.stopwords import split_stopwords, stopwords

FIELDS = ["claim_i18n.en^2", "title_i18n.en", "claim^2", "title"]


@pytest.mark.parametrize("text, lang, content, stop", [
    ("The vaccine is not safe", "en", "  vaccine     safe", "The is not"),
    ("Don't trust the WHO", "en", "Don't trust   WHO", "the"),
    ("La vacuna de Pfizer", "es", "  vacuna   Pfizer", "La de"),
    ("東京の地震は本当", "ja", "東京の地震は本当", ""),        # no list: nothing split
    ("the", None, "the", ""),                               # no language: nothing split
    ("", "en", "", ""),
])
def test_split_blanks_stop_words_and_keeps_everything_else_as_written(text, lang, content, stop):
    assert split_stopwords(text, lang) == (content, stop)


def test_every_analysed_language_has_a_list_and_polish_is_the_templates():
    from plugin.index.bodies import ANALYZED_LANGS, load_template

    for lang in ANALYZED_LANGS:
        assert stopwords(lang), lang
    template = load_template("component/factsieve-factcheck-fields")["template"]["settings"]["analysis"]
    assert stopwords("pl") == frozenset(template["filter"]["fs_pl_stop"]["stopwords"])
    assert {"the", "of", "and"} <= stopwords("en") and "vaccine" not in stopwords("en")


def test_the_selecting_and_the_rescoring_clause_cover_the_one_match():
    match, stop = bm25_clauses("The vaccine is not safe", FIELDS, "en")
    analysed, neutral = match["bool"]["should"]
    assert analysed["multi_match"] == {"query": "The vaccine is not safe", "fields": FIELDS[:2], "type": "most_fields"}
    assert neutral["multi_match"]["fields"] == FIELDS[2:] and "The" not in neutral["multi_match"]["query"]
    assert stop["multi_match"] == {"query": "The is not", "fields": FIELDS[2:], "type": "most_fields"}


def test_a_post_without_stop_words_or_without_analysed_fields_is_one_match():
    match, stop = bm25_clauses("vaccine safe", FIELDS, "en")
    assert stop is None and match["multi_match"]["fields"] == FIELDS
    match, stop = bm25_clauses("the vaccine", ["claim^2", "title"], None)
    assert stop is None and match["multi_match"]["query"] == "the vaccine"


def test_the_body_rescores_its_candidates_and_counts_every_hit():
    body = bm25_query("The vaccine is not safe", lang="en", filters={"term": {"lang": "en"}}, size=30)
    assert body["track_total_hits"] is True and body["size"] == 30
    assert body["rescore"]["window_size"] == 30 * BM25_RESCORE_DEPTH
    q = body["rescore"]["query"]
    assert q["query_weight"] == q["rescore_query_weight"] == 1.0 and q["score_mode"] == "total"
    assert body["query"]["bool"]["filter"] == [{"term": {"lang": "en"}}]
    # where no rescore can go (a hybrid sub-query), the stop words are a should clause again
    whole = whole_query(body)
    assert whole["bool"]["must"] == [body["query"]]
    assert whole["bool"]["should"] == [q["rescore_query"]]
    plain = bm25_query("vaccine", lang="en", filters=None, size=5)
    assert "rescore" not in plain and whole_query(plain) == plain["query"]


def test_evidence_bm25_splits_the_same_way_over_passage_fields():
    body = bm25_body("The vaccine is not safe", lang="en", filters=None, size=20)
    assert body["track_total_hits"] is True
    assert body["rescore"]["query"]["rescore_query"]["multi_match"]["fields"] == ["text^2", "title"]


def test_unsplit_is_the_one_match_that_min_max_fusion_and_the_template_read():
    body = bm25_query("The vaccine is not safe", lang="en", filters=None, size=10, split=False)
    assert "rescore" not in body and body["track_total_hits"] is True
    assert body["query"]["bool"]["must"] == [{"multi_match": {
        "query": "The vaccine is not safe", "fields": FIELDS, "type": "most_fields"}}]
