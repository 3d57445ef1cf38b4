"""The same-image query bodies and their reading (pure): tables checked by hand."""
import pytest

from plugin.image.model import pdq_fields
from plugin.image.queries import (EXACT_SCORE, SCRIPT, ImageHit, chunk_terms, neighbour_terms,
                                  read_image_hits, same_image_query)

A = "0123456789abcdef" * 4
B = "f" * 64


@pytest.mark.parametrize("chunk, expected", [
    ("0000", ["0000", "0001", "0002", "0004", "0008", "0010", "0020", "0040", "0080",
              "0100", "0200", "0400", "0800", "1000", "2000", "4000", "8000"]),
    ("ffff", ["ffff", "fffe", "fffd", "fffb", "fff7", "ffef", "ffdf", "ffbf", "ff7f",
              "feff", "fdff", "fbff", "f7ff", "efff", "dfff", "bfff", "7fff"]),
    ("A5A5", ["a5a5", "a5a4", "a5a7", "a5a1", "a5ad", "a5b5", "a585", "a5e5", "a525",
              "a4a5", "a7a5", "a1a5", "ada5", "b5a5", "85a5", "e5a5", "25a5"]),
])
def test_neighbour_terms_are_the_chunk_and_its_one_bit_neighbours(chunk, expected):
    assert neighbour_terms(chunk) == expected
    assert len(set(expected)) == 17


@pytest.mark.parametrize("bad", ["", "123", "12345", "zzzz", " 123", "+123"])
def test_neighbour_terms_refuse_what_is_not_a_chunk(bad):
    with pytest.raises(ValueError):
        neighbour_terms(bad)


def test_chunk_terms_are_the_union_over_hashes_per_position():
    terms = chunk_terms([A, B])
    assert len(terms) == 16
    assert terms[0] == sorted(set(neighbour_terms("0123")) | set(neighbour_terms("ffff")))
    assert terms[1] == sorted(set(neighbour_terms("4567")) | set(neighbour_terms("ffff")))
    assert chunk_terms([A, A.upper()]) == chunk_terms([A])  # duplicates add nothing


def test_query_body():
    body = same_image_query([A.upper(), A], max_distance=31, size=5, sha256="ab" * 32,
                            filters=[{"term": {"lang": "en"}}])
    assert body["size"] == 5
    assert body["min_score"] == 256 - 31
    assert body["_source"] == ["id", "image.text_heavy", "image.ocr_text"]
    inner = body["query"]["script_score"]["query"]["bool"]["filter"]
    assert inner[0] == {"term": {"lang": "en"}}
    should = inner[1]["bool"]["should"]
    assert inner[1]["bool"]["minimum_should_match"] == 1
    assert should[:16] == [{"terms": {f"image.pdq_c{i}": sorted(neighbour_terms(A[4 * i:4 * i + 4]))}}
                           for i in range(16)]
    assert should[16] == {"term": {"image.sha256": "ab" * 32}}
    script = body["query"]["script_score"]["script"]
    assert script["source"] == SCRIPT and script["lang"] == "painless"
    fields = pdq_fields(A)
    assert script["params"] == {"words": [fields[f"pdq_w{i}"] for i in range(4)],  # once: deduplicated
                                "sha256": "ab" * 32, "bits": 256, "exact": EXACT_SCORE}


def test_words_are_signed_longs_four_per_hash_in_order():
    params = same_image_query([A, B], max_distance=10)["query"]["script_score"]["script"]["params"]
    assert params["words"][4:] == [-1, -1, -1, -1]  # all ones, as a signed long
    assert params["words"][0] == 0x0123456789ABCDEF
    assert params["sha256"] is None
    assert len(same_image_query([A], max_distance=10)["query"]["script_score"]["query"]["bool"]
               ["filter"][0]["bool"]["should"]) == 16  # no sha256 term without a sha256


def test_sha256_alone_is_a_query_with_no_chunk_terms():
    body = same_image_query([], max_distance=31, sha256="cd" * 32)
    should = body["query"]["script_score"]["query"]["bool"]["filter"][0]["bool"]["should"]
    assert should[-1] == {"term": {"image.sha256": "cd" * 32}}
    assert all(not c["terms"][f"image.pdq_c{i}"] for i, c in enumerate(should[:16]))


@pytest.mark.parametrize("hashes, kwargs", [
    ([], {"max_distance": 31}),                   # nothing to look for
    (["abc"], {"max_distance": 31}),              # not 64 hex digits
    (["g" * 64], {"max_distance": 31}),
    ([A], {"max_distance": -1}),
    ([A], {"max_distance": 257}),
])
def test_bad_queries_are_refused(hashes, kwargs):
    with pytest.raises(ValueError):
        same_image_query(hashes, **kwargs)


def _hit(doc_id, score, image=None):
    return {"_id": doc_id, "_score": score, "_source": {"id": doc_id, **({"image": image} if image else {})}}


def test_read_image_hits_sorts_by_distance_and_tells_the_same_file():
    resp = {"hits": {"hits": [
        _hit("far", 226.0),
        _hit("same-file", EXACT_SCORE, {"text_heavy": True, "ocr_text": "BREAKING"}),
        _hit("b-same-hash", 256.0),
        _hit("a-same-hash", 256.0),
        _hit("near", 253.0, {"text_heavy": False}),
    ]}}
    assert read_image_hits(resp) == [
        ImageHit("same-file", 0, True, True, "BREAKING"),
        ImageHit("a-same-hash", 0, False, False, None),
        ImageHit("b-same-hash", 0, False, False, None),
        ImageHit("near", 3, False, False, None),
        ImageHit("far", 30, False, False, None),
    ]


def test_read_image_hits_of_nothing():
    assert read_image_hits({"hits": {"hits": []}}) == []
    assert read_image_hits({}) == []
