"""What an image adds to a match (``plugin.search.images``, ``plugin.search.image_query``): the
OCR query set, which same-image hits count, how they join the fused list, and the signals."""
from dataclasses import dataclass, replace

import numpy as np
import pytest

from plugin.image.model import ImageAnalysis, OcrResult, PdqHash
from plugin.models import Fused, Hit
from plugin.search.calibration import candidate_features
from plugin.search.image_query import image_note, post_texts
from plugin.search.images import (SAME_IMAGE, counted_hits, feature_view, merge_image_hits,
                                  ocr_agrees, ocr_queries, pin_image_hits, signals)


@dataclass(frozen=True)
class ImgHit:  # what plugin.image.queries.ImageHit carries
    id: str
    distance: int
    exact: bool = False
    text_heavy: bool = False
    ocr_text: str | None = None


def fused(doc, score, *queries):
    return Fused(id=doc, score=score, rank=0,
                 contributions={q: Hit(doc, 0.5, i + 1, q) for i, q in enumerate(queries)})


def image(text="", heavy=False, pdq=True):
    ocr = OcrResult(text=text, model="eng", lang="en", confidence=90.0, pass_name="image",
                    text_share=0.5 if heavy else 0.05) if text else None
    return ImageAnalysis(sha256="ab" * 32, width=10, height=10, format="PNG",
                         pdq=PdqHash("0" * 64, 90) if pdq else None,
                         query_hashes=("0" * 64,) if pdq else (), ocr=ocr, text_heavy=heavy)


def test_the_ocr_set_is_renamed_and_weighted():
    bodies, weights, stand_ins = ocr_queries({"bm25:post": {"q": 1}, "dense:post": {"q": 2}},
                                             {"bm25:post": 0.3, "dense:post": 0.7},
                                             {"bm25:post": "dense:post"}, 0.5)
    assert bodies == {"ocr:bm25:post": {"q": 1}, "ocr:dense:post": {"q": 2}}
    assert weights == {"ocr:bm25:post": 0.15, "ocr:dense:post": 0.35}
    assert stand_ins == {"ocr:bm25:post": "ocr:dense:post"}


@pytest.mark.parametrize("a, b, agree", [
    ("Drinking bleach cures covid says doctor", "Drinking bleach cures covid says doctcr", True),
    ("Drinking bleach cures covid", "drinking  BLEACH cures covid!", True),
    ("Drinking bleach cures covid", "The moon landing was staged in a studio", False),
    ("", "", False),
    (None, "anything", False),
])
def test_ocr_agreement(a, b, agree):
    assert ocr_agrees(a, b) is agree


@pytest.mark.parametrize("post_heavy, hit, counts", [
    (False, ImgHit("a", 4), True),                                   # a photo: the hash decides
    (True, ImgHit("a", 4, ocr_text="vote on wednesday"), False),     # a screenshot: texts differ
    (True, ImgHit("a", 4, ocr_text="polls open tuesday not wednesday"), True),
    (False, ImgHit("a", 4, text_heavy=True, ocr_text="another post"), False),  # the stored one is
    (True, ImgHit("a", 0, exact=True, ocr_text="other"), True),      # the same file
])
def test_a_hash_hit_on_a_text_heavy_image_counts_only_when_the_texts_agree(post_heavy, hit, counts):
    kept = counted_hits([hit], post_heavy, "Polls open Tuesday, not Wednesday")
    assert (kept == [hit]) is counts


def test_counted_hits_are_sorted_by_distance():
    hits = [ImgHit("b", 9), ImgHit("a", 3), ImgHit("c", 3)]
    assert [h.id for h in counted_hits(hits, False, None)] == ["a", "c", "b"]


def test_image_hits_join_first_by_distance_and_a_fact_check_found_both_ways_appears_once():
    text = [fused("t1", 0.9, "bm25:post"), fused("both", 0.5, "ocr:dense:post"), fused("t3", 0.2, "dense:post")]
    out = merge_image_hits(text, [ImgHit("img", 12), ImgHit("both", 3)])
    assert [f.id for f in out] == ["both", "img", "t1", "t3"]
    assert [f.rank for f in out] == [1, 2, 3, 4]
    assert set(out[0].contributions) == {"ocr:dense:post", SAME_IMAGE}
    assert [f.score for f in out] == [0.9, 0.9, 0.9, 0.2]  # never rising down the list
    assert merge_image_hits(text, []) == text


def test_pinning_after_a_rerank_puts_same_image_matches_back_first():
    reranked = [Fused("t1", 0.9, 1, {"bm25:post": Hit("t1", 1, 1, "q")}),
                Fused("img", 0.9, 2, {SAME_IMAGE: Hit("img", 7.0, 1, SAME_IMAGE)})]
    assert [(f.id, f.rank) for f in pin_image_hits(reranked)] == [("img", 1), ("t1", 2)]


def test_an_image_only_post_is_calibrated_from_its_ocr_retrievers():
    f = Fused("a", 1.0, 1, {"ocr:dense:post": Hit("a", 0.8, 1, "q"), "ocr:bm25:post": Hit("a", 3.0, 2, "q"),
                            SAME_IMAGE: Hit("a", 4.0, 1, SAME_IMAGE)})
    row = candidate_features(feature_view([f], caption=False), feature_view([f], caption=False), "en")[0]
    assert row[1] == pytest.approx(0.8) and row[2] == pytest.approx(0.5)
    captioned = candidate_features(feature_view([f], caption=True), [f], "en")[0]
    assert np.allclose(captioned[1:3], [0.0, 0.0])  # the caption's retrievers did not find it


@pytest.mark.parametrize("queries, expected", [
    ((SAME_IMAGE, "ocr:bm25:post", "dense:post"),
     [{"signal": "same-image", "distance": 4}, {"signal": "ocr"}, {"signal": "text"}]),
    (("ocr:dense:post",), [{"signal": "ocr"}]),
    (("bm25:post", "dense:post"), [{"signal": "text"}]),
    (("hybrid",), [{"signal": "text"}]),
])
def test_signals_come_from_the_contributions(queries, expected):
    f = Fused("a", 1.0, 1, {q: Hit("a", 4.0 if q == SAME_IMAGE else 0.3, 1, q) for q in queries})
    assert signals(f) == expected


@pytest.mark.parametrize("text, img, expected", [
    ("  5G  causes covid ", None, {"": "5G causes covid"}),
    ("", image("VACCINES CONTAIN CHIPS"), {"ocr:": "VACCINES CONTAIN CHIPS"}),
    ("look at this", image("Vaccines contain chips"), {"": "look at this", "ocr:": "Vaccines contain chips"}),
    ("look at this", image(""), {"": "look at this"}),
    ("", image(""), {}),
])
def test_post_texts(text, img, expected):
    assert post_texts(text, img, lambda t: " ".join(t.split())) == expected


def test_image_notes_say_what_could_not_be_used():
    assert image_note(None, {"": "x"}) is None
    assert image_note(image("text"), {"ocr:": "text"}) is None
    assert "no text was read" in image_note(image(""), {})
    assert "perceptual hash" in image_note(image("t", pdq=False), {"ocr:": "t"})


def test_an_image_note_says_when_the_ocr_budget_was_spent():
    cut = replace(image("partial"), ocr=replace(image("partial").ocr, budget_spent=True))
    assert image_note(cut, {"ocr:": "partial"}) == (
        "reading the image's text stopped at its time budget (FACTSIEVE_OCR_BUDGET_S, "
        "FACTSIEVE_OCR_API_BUDGET_S on the synchronous API): the text read before then is matched")
    nothing = replace(cut, ocr=replace(cut.ocr, text=""))
    assert image_note(nothing, {}).endswith("no text was read before then")
    assert cut.to_dict()["ocr"]["budget_spent"] is True
