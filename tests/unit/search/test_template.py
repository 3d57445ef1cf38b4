"""The stored template ``factsieve-match`` as pure text: rendered here with the mustache subset it
uses, for every combination of its params, it must be valid JSON and say what a match says."""
import itertools
import json
import re

import pytest

from plugin.search.hybrid import fusion_pipeline
from plugin.search.queries import KNN_EF_SEARCH, date_clause
from plugin.search.retrieval import RetrievalConfig, retrieval_config
from plugin.search.template import MONO_FIELD, fill, match_template, template_fits

SECTION = re.compile(r"\{\{([#^])(\w+)\}\}(.*?)\{\{/\2\}\}", re.S)


def mustache(source: str, params: dict) -> str:
    """``{{#x}}..{{/x}}``, ``{{^x}}..{{/x}}`` and ``{{x}}`` (JSON-escaped, as OpenSearch does
    for JSON templates): enough for this template, whose sections do not nest the same name."""
    while True:
        new = SECTION.sub(lambda m: m.group(3) if bool(params.get(m.group(2))) == (m.group(1) == "#")
                          else "", source)
        if new == source:
            break
        source = new
    return re.sub(r"\{\{(\w+)\}\}", lambda m: json.dumps(str(params.get(m.group(1), "")))[1:-1], source)


@pytest.fixture(scope="module")
def source():
    return match_template(retrieval_config("rrf"), model_id="MODEL", query_prefix="query: ")


def render(source, **params):
    return json.loads(mustache(source, params))


PARAMS = {"lang": "es", "mode": "mono", "date_to": "2021-06-01", "within_days": 30, "k": 5}


@pytest.mark.parametrize("present", [c for n in range(len(PARAMS) + 1)
                                     for c in itertools.combinations(PARAMS, n)])
def test_every_param_combination_renders_json(source, present):
    body = render(source, query_text='a "quoted" post', **{p: PARAMS[p] for p in present})
    bm25, neural = body["query"]["hybrid"]["queries"]
    assert bm25["bool"]["must"][0]["multi_match"]["query"] == 'a "quoted" post'
    assert neural["neural"]["embedding"]["query_text"] == 'query: a "quoted" post'
    assert bm25["bool"]["filter"] == neural["neural"]["embedding"]["filter"]["bool"]["filter"]
    assert body["size"] == (5 if "k" in present else 10)


def test_lang_adds_its_analysed_fields_and_the_mono_test(source):
    body = render(source, query_text="x", lang="es", mode="mono")
    bm25 = body["query"]["hybrid"]["queries"][0]["bool"]
    assert bm25["must"][0]["multi_match"]["fields"] == ["claim_i18n.es^2", "title_i18n.es", "claim^2", "title"]
    lang_filter = bm25["filter"][0]["bool"]["should"]
    assert lang_filter[0] == {"terms": {"lang": ["es"]}}
    # mode == "mono" makes the term match every document, so must_not drops the escape hatch
    assert lang_filter[1] == {"bool": {"must_not": [{"term": {MONO_FIELD: "mono"}}]}}
    no_lang = render(source, query_text="x")
    assert no_lang["query"]["hybrid"]["queries"][0]["bool"]["filter"] == [{"match_all": {}}]


def test_dates_filter_as_a_match_does(source):
    window = render(source, query_text="x", date_to="2021-06-01", within_days=30)
    clause = window["query"]["hybrid"]["queries"][0]["bool"]["filter"][0]
    # the same window as date_clause, in date math: 2021-06-01 minus 30 days is 2021-05-02
    assert date_clause(__import__("datetime").date(2021, 6, 1), 30) == {
        "range": {"published_at": {"lte": "2021-06-01", "gte": "2021-05-02"}}}
    assert clause == {"range": {"published_at": {"lte": "2021-06-01", "gte": "2021-06-01||-30d"}}}
    before = render(source, query_text="x", date_to="2021-06-01")
    clause = before["query"]["hybrid"]["queries"][0]["bool"]["filter"][0]
    assert clause == date_clause(__import__("datetime").date(2021, 6, 1))


def test_the_pipeline_travels_inside_and_the_model_is_filled_in(source):
    body = render(source, query_text="x")
    name, pipeline = fusion_pipeline(retrieval_config("rrf"), [1.0, 1.0])
    assert body["search_pipeline"] == pipeline
    neural = body["query"]["hybrid"]["queries"][1]["neural"]["embedding"]
    assert neural["model_id"] == "MODEL" and neural["k"] == body["query"]["hybrid"]["pagination_depth"] == 100
    assert neural["method_parameters"] == {"ef_search": KNN_EF_SEARCH}


def test_which_configurations_fit():
    assert template_fits(retrieval_config("rrf")) is None and template_fits(retrieval_config("minmax")) is None
    assert "by mode" in template_fits(retrieval_config("factsieve"))
    assert "BM25 then one dense" in template_fits(retrieval_config("multiquery"))
    dense_first = RetrievalConfig.model_validate(
        {"name": "d", "retrievers": [{"kind": "dense"}, {"kind": "bm25"}]})
    assert "order" in template_fits(dense_first)
    with pytest.raises(ValueError, match="cannot be a search template"):
        match_template(retrieval_config("factsieve"), model_id="M", query_prefix="")


def test_fill_refuses_an_unfilled_placeholder():
    assert fill("<<a>> <<b>>", {"a": "x", "b": [1]}) == "x [1]"
    with pytest.raises(ValueError, match="unfilled"):
        fill("<<a>> <<c>>", {"a": "x"})
