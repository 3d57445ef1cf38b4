"""``MatchRequest.from_mapping``: the one parser every way in shares, with the errors
``MatchRequest.validated`` gave before."""
from datetime import date

import pytest

from plugin.errors import BadInput
from plugin.models import Mode
from plugin.search.request import MatchRequest


def test_a_json_mapping_becomes_the_request_with_every_filter():
    req = MatchRequest.from_mapping({"text": "5G spreads covid", "lang": "en", "date": "2021-03-01",
                                     "mode": "cross", "k": 5, "within_days": 30,
                                     "allow": ["snopes.com"], "deny": ["x.com"], "rerank": True,
                                     "rerank_budget_ms": 80, "id": "ignored", "config": "ignored"})
    assert req == MatchRequest(text="5G spreads covid", lang="en", date=date(2021, 3, 1),
                               mode=Mode.CROSS, k=5, within_days=30, allow=("snopes.com",),
                               deny=("x.com",), rerank=True, rerank_budget_ms=80.0)


def test_defaults_and_the_live_budget():
    assert MatchRequest.from_mapping({"text": "x"}) == MatchRequest(text="x")
    assert MatchRequest.from_mapping({"text": "x"}, budget_ms=150).rerank_budget_ms == 150
    assert MatchRequest.from_mapping({"text": "x", "rerank_budget_ms": 40}, budget_ms=150).rerank_budget_ms == 40
    # a pydantic dump or the CLI's arguments: dates and modes already parsed, empty lists as None
    got = MatchRequest.from_mapping({"text": "x", "date": date(2020, 1, 2), "mode": Mode.MONO,
                                     "allow": None, "deny": None, "k": 3})
    assert (got.date, got.mode, got.allow, got.deny, got.k) == (date(2020, 1, 2), Mode.MONO, (), (), 3)


@pytest.mark.parametrize("data, message", [
    ({"text": " "}, "empty"),
    ({}, "empty"),
    ({"text": "x", "k": 0}, "k must"),
    ({"text": "x", "k": 101}, "k must"),
    ({"text": "x", "k": "5"}, "k must"),
    ({"text": "x", "lang": "English"}, "ISO 639-1"),
    ({"text": "x", "within_days": 3}, "needs a date"),
    ({"text": "x", "date": "2020-01-01", "within_days": -1}, "within_days must"),
    ({"text": "x" * 20001}, "longer"),
    ({"text": "x", "date": "yesterday"}, "YYYY-MM-DD"),
    ({"text": "x", "mode": "sideways"}, "valid modes"),
    ({"text": "x", "rerank_budget_ms": 0}, "rerank_budget_ms"),
    ({"text": "x", "rerank_budget_ms": "fast"}, "rerank_budget_ms"),
])
def test_one_validation_path(data, message):
    with pytest.raises(BadInput, match=message):
        MatchRequest.from_mapping(data)


def test_a_job_input_names_its_text_field():
    assert MatchRequest.from_mapping({"claim": "x"}, text_field="claim").text == "x"
