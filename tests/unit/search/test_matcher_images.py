"""The matcher with a post's image, over a store that answers like the cluster would: the
caption's and the OCR text's sub-queries and the same-image search in one ``_msearch``, the
image hits first, signals from the contributions, calibration from the right retrievers."""
from plugin.image.model import ImageAnalysis, OcrResult, PdqHash
from plugin.image.queries import FULL_SCORE
from plugin.search.request import MatchRequest
from tests.unit.search.test_matcher import FakeStore, fake_matcher


class ImageStore(FakeStore):
    """``FakeStore`` that also answers the same-image search (``script_score`` over
    ``image.*``) with ``images``: ``{id: (distance, text_heavy, ocr_text)}``."""

    def __init__(self, *args, images, **kw):
        super().__init__(*args, **kw)
        self.images, self.image_bodies, self.rounds = images, [], []

    def msearch(self, index, bodies):
        self.rounds.append(bodies)
        text = [b for b in bodies if "script_score" not in b["query"]]
        image = [b for b in bodies if "script_score" in b["query"]]
        out = super().msearch(index, text)
        for body in image:
            self.image_bodies.append(body)
            out.append({"hits": {"hits": [
                {"_id": d, "_score": FULL_SCORE - dist,
                 "_source": {"id": d, "image": {"text_heavy": heavy, "ocr_text": ocr}}}
                for d, (dist, heavy, ocr) in self.images.items()]}})
        return out


def analysis(text="", heavy=False):
    ocr = OcrResult(text=text, model="eng", lang="en", confidence=91.0, pass_name="image",
                    text_share=0.4 if heavy else 0.02) if text else None
    return ImageAnalysis(sha256="cd" * 32, width=800, height=600, format="JPEG",
                         pdq=PdqHash("f0" * 32, 100), query_hashes=("f0" * 32,), ocr=ocr, text_heavy=heavy)


def store_of(ids, images):
    return ImageStore({d: f"claim {d}" for d in ids}, bm25=ids, dense=ids[::-1], images=images)


def test_a_caption_and_an_image_run_as_two_query_sets_with_the_image_hits_first():
    ids = [str(i) for i in range(12)]
    store = store_of(ids, {"7": (6, False, None), "x": (20, False, None)})
    result = fake_matcher(store).match(MatchRequest(text="look at this", lang="en", k=4,
                                                    image=analysis("sharks on the highway")))
    assert len(store.rounds) == 1 and len(store.rounds[0]) == 5  # 2 + 2 + the image search
    assert [m["id"] for m in result.matches[:2]] == ["7", "x"]
    assert result.matches[0]["signals"] == [{"signal": "same-image", "distance": 6}, {"signal": "ocr"},
                                            {"signal": "text"}]
    assert result.matches[1]["signals"] == [{"signal": "same-image", "distance": 20}]
    assert result.matches[2]["signals"] == [{"signal": "ocr"}, {"signal": "text"}]
    assert set(result.matches[2]["explain"]) == {"bm25:post", "dense:post", "ocr:bm25:post", "ocr:dense:post"}
    assert result.image["ocr"]["text"] == "sharks on the highway" and result.fusion == "client"
    assert result.to_dict()["image"] == result.image
    assert [m["rank"] for m in result.matches] == [1, 2, 3, 4]


def test_an_image_only_post_runs_the_ocr_set_and_is_calibrated_from_it():
    ids = [str(i) for i in range(12)]
    store = store_of(ids, {})
    result = fake_matcher(store).match(MatchRequest(text="", lang="en", k=3, image=analysis("five g towers")))
    assert len(store.rounds[0]) == 3  # ocr:bm25, ocr:dense, the image search
    assert all(m["signals"] == [{"signal": "ocr"}] for m in result.matches)
    assert result.features is not None and result.features[:, 1].max() > 0  # kNN similarity read


def test_a_hash_hit_on_a_text_heavy_image_needs_the_texts_to_agree():
    ids = ["1", "2"]
    store = store_of(ids, {"same": (8, True, "polls open tuesday"), "other": (5, True, "the moon is cheese")})
    result = fake_matcher(store).match(MatchRequest(text="", lang="en", k=5,
                                                    image=analysis("Polls open Tuesday", heavy=True)))
    assert [m["id"] for m in result.matches][:1] == ["same"]
    assert "other" not in [m["id"] for m in result.matches]


def test_the_ocr_weight_scales_the_ocr_set():
    ids = [str(i) for i in range(5)]
    store = store_of(ids, {})
    m = fake_matcher(store, ocr_weight=0.5)
    texts = {"": "caption", "ocr:": "read"}
    decided = __import__("plugin.search.plan", fromlist=["MatchPlan"]).MatchPlan.decide(
        MatchRequest(text="caption", lang="en"), "en", m.config)
    _, weights, _ = m._plan_texts(MatchRequest(text="caption", lang="en"), texts, decided, m.config, None)
    assert weights == {"bm25:post": 1.0, "dense:post": 1.0, "ocr:bm25:post": 0.5, "ocr:dense:post": 0.5}


def test_the_same_image_search_carries_the_text_queries_filters():
    from datetime import date

    store = store_of(["1"], {})
    fake_matcher(store).match(MatchRequest(text="", lang="en", date=date(2021, 1, 1), image=analysis("x y")))
    candidates = store.image_bodies[0]["query"]["script_score"]["query"]["bool"]["filter"]
    assert any("published_at" in str(c) for c in candidates)
