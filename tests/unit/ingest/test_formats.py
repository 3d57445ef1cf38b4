"""Format readers: every good record comes through, every bad one is an error naming its place."""
from __future__ import annotations

import dataclasses
import io
from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from plugin.errors import BadInput
from plugin.ingest import Format, RawRecord, parse_bytes, read_records
from plugin.ingest.formats.dispatch import Source, choose_format
from plugin.models import FactCheck

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
MULTICLAIM = FIXTURES / "multiclaim" / "fact_checks.csv"


def refs(records: list[RawRecord]) -> list[str]:
    return [r.ref.rsplit(":", 1)[-1] if ":" in r.ref else "" for r in records]


# --------------------------------------------------------------------------- Format

@pytest.mark.parametrize(("text", "expected"), [
    ("jsonl", Format.jsonl),
    ("JSON", Format.json),
    (" csv ", Format.csv),
    ("ClaimReview", Format.claimreview),
    ("multiclaim", Format.multiclaim),
    ("auto", Format.auto),
    (Format.csv, Format.csv),
])
def test_format_parse(text, expected):
    assert Format.parse(text) is expected


def test_format_parse_lists_valid_values():
    with pytest.raises(BadInput) as err:
        Format.parse("xml")
    assert "'xml'" in str(err.value)
    for value in ("auto", "jsonl", "json", "csv", "claimreview", "multiclaim"):
        assert value in str(err.value)


def test_unknown_format_name_raises_before_iterating():
    with pytest.raises(BadInput):
        read_records([FIXTURES / "mixed.jsonl"], "yaml")
    with pytest.raises(BadInput):
        parse_bytes(b"[]", "yaml")


def test_raw_record_is_frozen():
    rec = RawRecord("x:1", {"claim": "c"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.ref = "y"  # type: ignore[misc]
    assert rec.ok and not RawRecord("x", None, "broken").ok


# --------------------------------------------------------------------------- fixtures, whole files
# (file, [(ref suffix, error substring or None)], refs FactCheck rejects)

FIXTURE_TABLE = [
    ("mixed.jsonl",
     [("1", None), ("2", None), ("4", "line 4: invalid JSON"),
      ("5", "line 5: expected a JSON object, got an array"), ("6", None), ("7", None), ("8", None)],
     {"6", "7"}),
    ("factchecks.csv",
     [("2", None), ("3", None), ("5", "line 5: expected 10 cells, got 3"), ("6", None), ("7", None)],
     {"6", "7"}),
    ("factchecks.json",
     [("1", None), ("2", "item 2: expected a JSON object, got a string"), ("3", None)],
     set()),
    ("claimreview_single.json", [("1", None)], set()),
    ("claimreview_list.json",
     [("1", None), ("2", None), ("3", "item 3: ClaimReview without claimReviewed")],
     set()),
    ("claimreview_graph.jsonld", [("3", None)], set()),
    ("google_factcheck_tools.json", [("1.1", None), ("1.2", None), ("2.1", None)], set()),
    ("multiclaim/fact_checks.csv", [(str(n), None) for n in range(2, 12)], set()),
]


@pytest.mark.parametrize(("name", "expected", "rejected"), FIXTURE_TABLE,
                         ids=[row[0] for row in FIXTURE_TABLE])
def test_fixture_records(name, expected, rejected):
    records = list(read_records([FIXTURES / name]))
    assert [(r.ref.rsplit(":", 1)[-1], r.ok) for r in records] == [(ref, err is None)
                                                                   for ref, err in expected]
    for rec, (ref, err) in zip(records, expected):
        assert rec.ref == f"{Path(name).name}:{ref}"
        if err is None:
            assert rec.error is None and isinstance(rec.data, dict)
        else:
            assert rec.data is None and err in rec.error
    for rec in records:
        if not rec.ok:
            continue
        if rec.ref.rsplit(":", 1)[-1] in rejected:  # the pipeline's reject, not the reader's
            with pytest.raises(ValidationError):
                FactCheck.model_validate(rec.data)
        else:
            FactCheck.model_validate(rec.data)


def test_rejects_are_for_the_right_reason():
    by_ref = {r.ref.rsplit(":", 1)[-1]: r for r in read_records([FIXTURES / "mixed.jsonl"])}
    with pytest.raises(ValidationError, match="claim"):
        FactCheck.model_validate(by_ref["6"].data)
    with pytest.raises(ValidationError, match="not an ISO date"):
        FactCheck.model_validate(by_ref["7"].data)


# --------------------------------------------------------------------------- field mapping

EXPECTED_DATA = [
    ("mixed.jsonl", "2", {
        "claim": "El agua con limón cura el cáncer.", "url": "https://verifica.example.es/limon",
        "rating": "Falso", "lang": "es", "published_at": "2020-07-01",
        "extra": {"claim_en": "Lemon water cures cancer."}}),
    ("mixed.jsonl", "8", {
        "id": "j7", "claim": "Keeps its extras.", "extra": {"desk": "science", "tags": ["health"]}}),
    ("factchecks.csv", "3", {
        "id": "fc-2", "claim": "A quoted claim, with a comma\nand a line break.", "title": None,
        "url": "https://checks.example.org/quoted", "publisher": "Example Checks",
        "rating": "Mostly true", "lang": "en-GB", "published_at": "2021-02-04", "claimant": None,
        "extra": {"notes": "reviewed twice"}}),
    ("factchecks.json", "3", {
        "id": "a3", "claim": "Seagulls can drink sea water.", "lang": "en",
        "published_at": "2022-09-02", "rating": "True"}),
    ("claimreview_single.json", "1", {
        "claim": "Eating garlic prevents infection with the new coronavirus.",
        "title": "No, garlic does not protect you from the coronavirus",
        "url": "https://factcheck.example.org/2020/03/garlic-cure",
        "publisher": "Example Fact Check", "rating": "False", "lang": "en",
        "published_at": "2020-03-04", "claimant": "Viral Facebook post",
        "extra": {"rating_value": "1", "best_rating": "5", "worst_rating": "1",
                  "claim_date": "2020-02-28",
                  "appearances": ["https://social.example.com/posts/12345"]}}),
    ("claimreview_list.json", "1", {
        "claim": "La vacuna contra el covid-19 vuelve magnético el brazo.",
        "title": "La vacuna no vuelve magnético el brazo",
        "url": "https://verificado.example.org/2021/05/vacuna-iman",
        "publisher": "Verificado Ejemplo", "rating": "Falso", "lang": "es",
        "published_at": "2021-05-20T09:30:00+02:00", "extra": {"rating_value": "Falso"}}),
    ("claimreview_list.json", "2", {
        "claim": "The minimum wage has doubled since 2010.",
        "url": "https://checks.example.net/claims/minimum-wage", "publisher": "Checks Example",
        "lang": "en", "published_at": "2019-11-02",
        "extra": {"rating_value": 2, "best_rating": 5, "worst_rating": 1}}),
    ("claimreview_graph.jsonld", "3", {
        "claim": "5G-Masten verbreiten das Coronavirus.",
        "title": "5G verbreitet das Coronavirus nicht",
        "url": "https://faktencheck.example.de/artikel/5g-corona",
        "publisher": "Faktencheck Beispiel", "rating": "Falsch", "lang": "de",
        "published_at": "2020-04-09", "claimant": "Telegram-Kanal",
        "extra": {"rating_value": 1, "best_rating": 5, "worst_rating": 1,
                  "jsonld_id": "https://faktencheck.example.de/artikel/5g-corona#claimreview"}}),
    ("google_factcheck_tools.json", "1.2", {
        "claim": "Drinking hot water every 15 minutes kills the coronavirus.",
        "claimant": "WhatsApp message", "title": "L'acqua calda non uccide il coronavirus",
        "url": "https://verifica.example.it/acqua-calda-coronavirus",
        "publisher": "verifica.example.it", "rating": "Falso", "lang": "it",
        "published_at": "2020-03-13T08:00:00Z",
        "extra": {"claim_date": "2020-03-10T00:00:00Z", "publisher_site": "verifica.example.it"}}),
    ("google_factcheck_tools.json", "2.1", {
        "claim": "The city council banned bicycles downtown.", "title": "No bicycle ban downtown",
        "url": "https://localfacts.example.com/bicycle-ban", "publisher": "Local Facts",
        "rating": "Misleading", "lang": "en", "published_at": "2022-06-01T00:00:00Z",
        "extra": {"publisher_site": "localfacts.example.com"}}),
]


@pytest.mark.parametrize(("name", "ref", "expected"), EXPECTED_DATA,
                         ids=[f"{n}:{r}" for n, r, _ in EXPECTED_DATA])
def test_record_data(name, ref, expected):
    records = {r.ref.rsplit(":", 1)[-1]: r for r in read_records([FIXTURES / name])}
    assert records[ref].data == expected


# (id, claim, lang, published_at, url) for rows of the real MultiClaim trial sample
MULTICLAIM_ROWS = [
    ("0", "South Africa's PRASA hiring workers for railway", "en", date(2022, 6, 20),
     "https://factcheck.afp.com/doc.afp.com.32CM7B6#ee0e1119e258f30f95f6876931cb0a51"),
    ("5", "혈압 정상수치, 한국만 120/80mmHg다.", "ko", date(2021, 3, 29),
     "https://factcheckkorea.afp.com/hyeolab-jeongsangsuci-hangugman-12080mmhg-sasil-anim-who-"
     "poham-segye-gaggug-bogeon-danggug-jeongsang#d3e79205ef53d05b01b4c3a32264d5ff"),
    ("7", "La imagen de un niño sirio que duerme junto a las tumbas de sus padres", "es",
     date(2020, 3, 11),
     "https://factual.afp.com/el-nino-no-duerme-entre-las-tumbas-de-sus-padres-en-siria-fue-"
     "una-puesta-en-escena-de-un-estudiante#bd7b5ff4c9d4f8e7a5721c1b1376888a"),
]


@pytest.mark.parametrize("path", [MULTICLAIM, MULTICLAIM.parent], ids=["file", "directory"])
@pytest.mark.parametrize(("fc_id", "claim", "lang", "published", "url"), MULTICLAIM_ROWS,
                         ids=[row[0] for row in MULTICLAIM_ROWS])
def test_multiclaim_rows(path, fc_id, claim, lang, published, url):
    records = {r.data["id"]: r for r in read_records([path])}
    assert len(records) == 10
    fc = FactCheck.model_validate(records[fc_id].data)
    assert (fc.id, fc.claim, fc.lang, fc.published_at, fc.url) == (fc_id, claim, lang, published, url)


def test_multiclaim_translations_in_extra():
    rec = next(r for r in read_records([MULTICLAIM]) if r.data["id"] == "5")
    assert rec.data["title"].startswith("혈압 정상수치, 한국만 120/80mmHg? 사실 아님")
    assert rec.data["extra"]["claim_en"] == "Normal blood pressure is 120/80 mmHg in Korea alone."
    assert rec.data["extra"]["title_en"].startswith("Blood pressure normal value")
    assert rec.data["extra"]["lang_scores"] == [["kor", 1.0]]


# --------------------------------------------------------------------------- MultiClaim cells

HEADER = b"fact_check_id,claim,instances,title\n"

MULTICLAIM_CELLS = [
    # (row, expected subset of data or error substring)
    (b"""1,"('Original\nwith a break', 'English', [('spa', 0.3), ('por', 0.7)])","[(1600000000.0, 'https://b.example/2'), (1500000000, 'https://a.example/1')]",\n""",
     {"claim": "Original\nwith a break", "lang": "pt", "published_at": "2017-07-14",
      "url": "https://a.example/1",
      "extra": {"claim_en": "English", "lang_scores": [["spa", 0.3], ["por", 0.7]],
                "urls": ["https://a.example/1", "https://b.example/2"]}}),
    (b"""2,"('Texto', 'Text', [('ceb', 1.0)])",[],"('T', 'T', [('ceb', 1.0)])"\n""",
     {"claim": "Texto", "lang": "ceb", "title": "T"}),
    (b"""3,"('Texto', 'Text', [])","[(1500000000.0, 'fb')]",\n""",
     {"claim": "Texto", "published_at": "2017-07-14", "extra": {"claim_en": "Text", "urls": ["fb"]}}),
    (b"""4,"__import__('os').system('true')","[]",\n""", "line 2: claim: not a Python literal"),
    (b"""5,"('', 'English only', [('eng', 1.0)])","[]",\n""", "line 2: claim: no original-language text"),
    (b"""6,"('Texto', 'Text', [('spa', 1.0)])","[('yesterday', 'https://a.example')]",\n""",
     "line 2: instances: expected (unix_timestamp, url)"),
    (b"""7,"('Texto', 'Text', [('spa', 1.0)])","{'a': 1}",\n""", "line 2: instances: expected a list"),
    (b"""8,,"[]",\n""", "line 2: claim: no original-language text"),
]


@pytest.mark.parametrize(("row", "expected"), MULTICLAIM_CELLS)
def test_multiclaim_cells(row, expected):
    (rec,) = list(parse_bytes(HEADER + row, Format.multiclaim, "fact_checks.csv"))
    assert rec.ref == "fact_checks.csv:2"
    if isinstance(expected, str):
        assert rec.data is None and expected in rec.error
    else:
        assert rec.error is None
        for key, value in expected.items():
            assert rec.data[key] == value, key
        FactCheck.model_validate(rec.data)


def test_multiclaim_missing_columns_is_a_file_error():
    assert list(parse_bytes(b"id,claim\n1,x\n", Format.multiclaim, "f.csv")) == [
        RawRecord("f.csv", None, "CSV header lacks column(s): fact_check_id, instances")]


# --------------------------------------------------------------------------- ClaimReview shapes

CLAIMREVIEW_BODIES = [
    # (body, expected [(ref suffix, claim or error substring)])
    (b'{"@type": "http://schema.org/ClaimReview", "claimReviewed": {"@value": "IRI type"}}',
     [("1", "IRI type")]),
    (b'{"@type": "schema:ClaimReview", "claimReviewed": ["first", "second"]}', [("1", "first")]),
    (b'[{"@graph": [{"@type": "WebSite"}, {"@type": "ClaimReview", "claimReviewed": "a"}]},'
     b' {"@type": "ClaimReview", "claimReviewed": "b"}]',
     [("2", "a"), ("3", "b")]),
    (b'{"claims": [{"text": "no reviews"}, {"claimReview": [{"url": "https://x.example"}]}]}',
     [("1", "claim 1: no claimReview"), ("2.1", "claim 2, review 1: claim without text")]),
    (b'{"claims": []}', []),
    (b'{"@type": "WebPage", "name": "no reviews here"}',
     [("", "no ClaimReview node and no Fact Check Tools 'claims' list found")]),
]


@pytest.mark.parametrize(("body", "expected"), CLAIMREVIEW_BODIES)
def test_claimreview_shapes(body, expected):
    records = list(parse_bytes(body, Format.claimreview, "cr"))
    assert refs(records) == [ref for ref, _ in expected]
    for rec, (_, text) in zip(records, expected):
        if rec.ok:
            assert rec.data["claim"] == text
        else:
            assert text in rec.error


@pytest.mark.parametrize(("in_language", "lang", "extra"), [
    ("en-US", "en-US", None),
    ("Español", "es", None),
    ({"@type": "Language", "name": "Korean"}, "ko", None),
    ({"@type": "Language", "name": "Klingon"}, None, "Klingon"),
    ([{"@type": "Language", "alternateName": "pt"}], "pt", None),
])
def test_claimreview_in_language(in_language, lang, extra):
    import json

    body = json.dumps({"@type": "ClaimReview", "claimReviewed": "c", "inLanguage": in_language})
    (rec,) = list(parse_bytes(body.encode(), Format.claimreview))
    assert rec.data.get("lang") == lang
    assert rec.data.get("extra", {}).get("inLanguage") == extra


# --------------------------------------------------------------------------- auto detection

AUTO_BODIES = [
    # (name, body, expected refs, first claim or error)
    ("body", b'[{"claim": "a"}, {"claim": "b"}]', ["1", "2"], "a"),
    ("body", b'{"claim": "one"}', ["1"], "one"),
    ("body", b'{"claim": "a"}\r\n\r\n{"claim": "b"}\r\n', ["1", "3"], "a"),
    ("body", b'\xef\xbb\xbf{"claim": "bom"}', ["1"], "bom"),
    ("body", (FIXTURES / "claimreview_single.json").read_bytes(), ["1"],
     "Eating garlic prevents infection with the new coronavirus."),
    ("body", (FIXTURES / "google_factcheck_tools.json").read_bytes(), ["1.1", "1.2", "2.1"],
     "Drinking hot water every 15 minutes kills the coronavirus."),
    ("feed.csv", b"claim,lang\nhello,en\n", ["2"], "hello"),
    ("body", b"claim,lang\nhello,en\n", [""], "cannot tell the format of 'body' (not JSON)"),
    ("body", b'{"claim": ', [""], "invalid JSON"),
    ("body", b"\xff\xfe\x00", [""], "not UTF-8 text (byte 0)"),
]


@pytest.mark.parametrize(("name", "body", "expected_refs", "first"), AUTO_BODIES)
def test_parse_bytes_auto(name, body, expected_refs, first):
    records = list(parse_bytes(body, Format.auto, name))
    assert refs(records) == expected_refs
    assert (records[0].data["claim"] if records[0].ok else records[0].error).startswith(first)


AUTO_FILES = [
    # (file name, content, expected refs, first claim or error)
    ("a.jsonl", b'{"claim": "x"}\n', ["1"], "x"),
    ("a.ndjson", b'{"claim": "x"}\n', ["1"], "x"),
    ("a.json", b'[{"claim": "x"}]', ["1"], "x"),
    ("a.json", b'{"claim": "x"}\n{"claim": "y"}\n', ["1", "2"], "x"),  # JSON Lines named .json
    ("a.jsonld", (FIXTURES / "claimreview_graph.jsonld").read_bytes(), ["3"],
     "5G-Masten verbreiten das Coronavirus."),
    ("a.csv", b"claim\nx\n", ["2"], "x"),
    ("a.csv", MULTICLAIM.read_bytes(), [str(n) for n in range(2, 12)],
     "South Africa's PRASA hiring workers for railway"),
    # an unknown extension (or none) means the content decides, as for a body
    ("a.txt", b'{"claim": "x"}', ["1"], "x"),
    ("a.txt", b'{"claim": "x"}\n{"claim": "y"}\n', ["1", "2"], "x"),
    ("feed", (FIXTURES / "claimreview_single.json").read_bytes(), ["1"],
     "Eating garlic prevents infection with the new coronavirus."),
    ("a.tsv", b"claim\tlang\nx\ten\n", [""], "cannot tell the format of 'a.tsv' (not JSON)"),
    ("a.json", b"", [""], "cannot tell the format of 'a.json' (not JSON)"),
    ("a.json", b'{"claim": "x"', [""], "invalid JSON"),
    ("a.jsonl", "{\"claim\": \"caf\u00e9\"}".encode("latin-1"), [""], "not UTF-8 text (byte 14)"),
    ("a.jsonl", b"", [], None),
]


@pytest.mark.parametrize(("filename", "content", "expected_refs", "first"), AUTO_FILES)
def test_read_records_auto(tmp_path, filename, content, expected_refs, first):
    path = tmp_path / filename
    path.write_bytes(content)
    records = list(read_records([path]))
    assert refs(records) == expected_refs
    if first is not None:
        assert (records[0].data["claim"] if records[0].ok else records[0].error).startswith(first)
        assert records[0].ref in (str(path), f"{filename}:{expected_refs[0]}")


@pytest.mark.parametrize(("filename", "content", "expected_refs", "first"), AUTO_FILES)
def test_body_and_file_choose_alike(tmp_path, filename, content, expected_refs, first):
    path = tmp_path / filename
    path.write_bytes(content)
    from_file = [(filename if r.ref == str(path) else r.ref, r.data, r.error)
                 for r in read_records([path])]
    assert [(r.ref, r.data, r.error) for r in parse_bytes(content, Format.auto, filename)] == from_file


CHOICES = [
    # (name, content, given format, chosen format)
    ("a.jsonl", "not even JSON", Format.auto, Format.jsonl),
    ("a.ndjson", "", Format.auto, Format.jsonl),
    ("a.csv", "claim,lang\n", Format.auto, Format.csv),
    ("a.CSV", "Fact_Check_ID,claim,instances\r\n", Format.auto, Format.multiclaim),
    ("a.json", '[{"claim": "x"}]', Format.auto, Format.json),
    ("a.jsonld", '{"@type": "ClaimReview"}', Format.auto, Format.claimreview),
    ("body", '{"claims": []}', Format.auto, Format.claimreview),
    ("a.txt", '{"claim": "x"}\n{"claim": "y"}', Format.auto, Format.jsonl),
    ("a.json", "fact_check_id,instances\n", Format.csv, Format.csv),  # explicit wins
    ("a.csv", '{"claim": "x"}', Format.json, Format.json),
]


@pytest.mark.parametrize(("name", "content", "given", "chosen"), CHOICES)
def test_choose_format(name, content, given, chosen):
    source = Source(name, lambda newline: io.StringIO(content, newline=newline))
    assert choose_format(given, source)[0] is chosen


def test_bad_files_do_not_stop_the_others(tmp_path):
    missing = tmp_path / "missing.jsonl"
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("claim\ncaf\u00e9\n".encode("latin-1"))
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    good = FIXTURES / "mixed.jsonl"
    records = list(read_records([missing, latin1, empty_dir, str(good)]))
    assert [(r.ref, r.error) for r in records[:3]] == [
        (str(missing), "no such file"),
        (str(latin1), "not UTF-8 text (byte 9)"),
        (str(empty_dir), "is a directory without fact_checks.csv"),
    ]
    assert [r.ref for r in records[3:] if r.ok] == [f"mixed.jsonl:{n}" for n in (1, 2, 6, 7, 8)]


def test_single_path_is_not_iterated_as_characters():
    assert len(list(read_records(str(FIXTURES / "factchecks.json")))) == 3


@pytest.mark.parametrize(("header", "field"), [
    ("claim", "claim"), ("claim_text", "claim"), ("claimReviewed", "claim"),
    ("date", "published_at"), ("published", "published_at"), ("datePublished", "published_at"),
    ("published_at", "published_at"), ("language", "lang"), ("inLanguage", "lang"),
    ("Lang", "lang"), ("claimant", "claimant"), ("source", "source"), ("text", None),
])
def test_csv_column_synonyms(header, field):
    (rec,) = list(parse_bytes(f"{header}\nvalue\n".encode(), Format.csv))
    if field is None:
        assert rec.data == {"extra": {header: "value"}}
    else:
        assert rec.data == {field: "value"}


def test_first_of_two_synonyms_wins_and_the_other_is_kept():
    (rec,) = list(parse_bytes(b"claim,claim_text\n,second\n", Format.csv))
    assert rec.data == {"claim": "second"}
    (rec,) = list(parse_bytes(b"claim,claim_text\nfirst,second\n", Format.csv))
    assert rec.data == {"claim": "first", "extra": {"claim_text": "second"}}


def test_extra_must_be_an_object():
    (rec,) = list(parse_bytes(b'{"claim": "c", "extra": "x"}\n', Format.jsonl))
    assert rec.error == "line 1: field 'extra' must be an object, got a string"


def test_record_refs_name_the_file_and_file_errors_the_path(tmp_path):
    page = tmp_path / "page.json"
    page.write_text('{"@type": "WebPage"}', encoding="utf-8")
    assert list(read_records([page], Format.claimreview)) == [
        RawRecord(str(page), None, "no ClaimReview node and no Fact Check Tools 'claims' list found")]
    (rec,) = list(read_records([FIXTURES / "claimreview_single.json"], "claimreview"))
    assert rec.ref == "claimreview_single.json:1"
    (rec, *_) = list(read_records([MULTICLAIM.parent]))
    assert rec.ref == "fact_checks.csv:2"
