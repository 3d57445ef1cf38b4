"""FactCheck validation, stable ids and rating normalisation."""
from datetime import date

import pytest
from pydantic import ValidationError

from plugin.errors import BadInput
from plugin.models import FactCheck, Mode, Verdict, normalise_rating, stable_id


@pytest.mark.parametrize("rating, verdict", [
    ("False", Verdict.REFUTED),
    ("Pants on Fire!", Verdict.REFUTED),
    ("Falso", Verdict.REFUTED),
    ("Faux", Verdict.REFUTED),
    ("거짓", Verdict.REFUTED),
    ("True", Verdict.SUPPORTED),
    ("Verdadero", Verdict.SUPPORTED),
    ("Mostly False", Verdict.CONFLICTING),
    ("Half True", Verdict.CONFLICTING),
    ("Mixture", Verdict.CONFLICTING),
    ("Engañoso", Verdict.CONFLICTING),
    ("Missing context", Verdict.CONFLICTING),
    ("Unproven", Verdict.NOT_ENOUGH_EVIDENCE),
    ("Labeled Satire", Verdict.REFUTED),
    ("", None),
    (None, None),
    ("Legend", None),
])
def test_normalise_rating(rating, verdict):
    assert normalise_rating(rating) is verdict


def test_stable_id_prefers_given_then_url_then_claim():
    assert stable_id("abc", "https://x.org/1", "c", "en") == "abc"
    by_url = stable_id(None, "https://x.org/1", "c", "en")
    assert by_url == stable_id("", "https://x.org/1", " c ", "es")
    assert by_url != stable_id(None, "https://x.org/2", "c", "en")
    # one article reviewing two claims gives two documents
    assert by_url != stable_id(None, "https://x.org/1", "other claim", "en")
    by_claim = stable_id(None, None, "claim text", "en")
    assert by_claim == stable_id(None, None, " claim text ", "en")
    assert by_claim != stable_id(None, None, "claim text", "es")


def test_factcheck_derives_fields():
    fc = FactCheck.model_validate({"claim": " Vaccines alter DNA ", "url": "https://www.snopes.com/fc/x",
                                   "rating": "False", "date": "2021-03-04T10:00:00Z", "lang": "EN-us", "id": 7})
    assert fc.claim == "Vaccines alter DNA"
    assert fc.domain == "snopes.com"
    assert fc.verdict is Verdict.REFUTED
    assert fc.published_at == date(2021, 3, 4)
    assert fc.lang == "en"
    assert fc.id == "7"
    assert fc.to_source()["published_at"] == "2021-03-04"
    assert "title" not in fc.to_source()


@pytest.mark.parametrize("record, field", [
    ({"claim": ""}, "claim"),
    ({"title": "no claim"}, "claim"),
    ({"claim": "x", "date": "2021-13-45"}, "published_at"),
    ({"claim": "x", "url": "ftp://x"}, "url"),
    ({"claim": "x", "lang": "english!"}, "lang"),
])
def test_factcheck_rejects(record, field):
    with pytest.raises(ValidationError) as err:
        FactCheck.model_validate(record)
    assert field in str(err.value)


def test_mode_parse_lists_valid_values():
    assert Mode.parse("MONO") is Mode.MONO
    with pytest.raises(BadInput, match="mono, cross, auto"):
        Mode.parse("both")


@pytest.mark.parametrize("value", [1e300, -1e300, 1e18, float("inf"), float("nan"), "Infinity"])
def test_absurd_dates_are_a_validation_error(value):
    from pydantic import ValidationError

    from plugin.models import FactCheck
    with pytest.raises(ValidationError, match="published_at"):
        FactCheck.model_validate({"claim": "c", "published_at": value})


# -- ids a client sends: no control characters (issue 21, medium 5) --------------------------------
@pytest.mark.parametrize("bad", ["a\x1fp-1", "p\x00", "p\x1b[31m", "p\x7f", "p\x85q"])
def test_ids_and_urls_refuse_control_characters(bad):
    from plugin.evidence.formats import EvidenceDocument

    with pytest.raises(ValidationError, match="control characters"):
        FactCheck(id=bad, claim="c")
    with pytest.raises(ValidationError, match="control characters"):
        FactCheck(claim="c", url=f"https://checks.example.org/{bad}")
    with pytest.raises(ValidationError, match="control characters"):
        EvidenceDocument(url="https://news.example.org/a", text="t", claim_id=bad)


def test_printable_ids_pass_and_their_ends_are_still_stripped():
    from plugin.evidence.formats import EvidenceDocument

    assert FactCheck(id=" fc-1\n", claim="c").id == "fc-1"
    assert FactCheck(id="ĳ-ñ 1", claim="c").id == "ĳ-ñ 1"
    assert EvidenceDocument(url="https://news.example.org/a", text="t", claim_id=" 7\n").claim_id == "7"


@pytest.mark.parametrize("model, body, field", [
    ("PostIn", {"id": "a\x1fp-1", "text": "x"}, "id"),
    ("PostIn", {"id": "p-1", "text": "x", "url": "https://e.org/\x1fx"}, "url"),
    ("WebhookIn", {"url": "https://hooks.example.org/\x00", "events": ["post.matched"]}, "url"),
])
def test_api_ids_refuse_control_characters(model, body, field):
    from api import schemas

    with pytest.raises(ValidationError, match="control characters") as err:
        getattr(schemas, model).model_validate(body)
    assert err.value.errors()[0]["loc"] == (field,)
