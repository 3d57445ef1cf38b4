"""The image lab end to end: image posts rendered from the sample tweets and matched by their
OCR text (real Tesseract, real OpenSearch), the near-duplicate bench on a few images, and the
sample image post under samples/images."""
import json

import pytest

from cli.main import main
from tests.conftest import SAMPLES

pytestmark = pytest.mark.integration


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_image_posts_match_by_their_ocr_text_beside_the_text_run(capsys, embedder, tmp_path):
    argv = ["image-posts", "--dataset", str(SAMPLES / "clef2020"), "--split", "dev,test",
            "--templates", "light,meme", "--limit", "3", "--work-dir", str(tmp_path)]
    code, out, _ = run(capsys, *argv)
    result = json.loads(out)
    assert code == 0 and result["n_queries"] == 3 and result["modes"] == ["mono"]
    text = result["text"]["mono"]
    assert text["S@10"] == 1.0
    light = result["templates"]["light"]
    assert light["images"] == 3 and light["empty"] == 0
    assert light["cer"]["mean"] < 0.1  # a clean card reads almost exactly
    assert light["modes"]["mono"]["S@10"] == 1.0
    assert light["modes"]["mono"]["ratio_MAP@5"] == pytest.approx(
        light["modes"]["mono"]["MAP@5"] / text["MAP@5"], abs=1e-3)
    assert set(result["templates"]["meme"]["modes"]["mono"]) >= {"MAP@5", "S@1", "S@10", "ratio_MAP@5"}
    assert len(list((tmp_path / "clef2020" / "light").glob("*.png"))) == 3
    assert len(list((tmp_path / "clef2020" / "meme").glob("*.jpg"))) == 3

    code, again, _ = run(capsys, *argv)  # the readings come from the work folder
    assert code == 0 and json.loads(again)["templates"]["light"]["cer"] == light["cer"]


def test_captioned_image_posts_are_matched_per_ocr_weight_beside_the_caption_alone(capsys, embedder, tmp_path):
    code, out, _ = run(capsys, "image-posts", "--dataset", str(SAMPLES / "clef2020"), "--split", "dev,test",
                       "--templates", "light", "--limit", "3", "--work-dir", str(tmp_path),
                       "--caption", "half", "--ocr-weights", "0.5,2")
    result = json.loads(out)
    assert code == 0 and result["caption"] == "half"
    assert set(result["caption_only"]["mono"]) >= {"MAP@5", "S@1", "S@10", "ratio_MAP@5"}
    light = result["templates"]["light"]
    assert light["images"] == 3 and "modes" not in light
    assert set(light["weights"]) == {"0.5", "2"}
    assert light["weights"]["0.5"]["mono"]["S@10"] == 1.0  # caption + the rest read from the card
    assert light["cer"]["mean"] < 0.1
    assert len(list((tmp_path / "clef2020" / "light-caption-half").glob("*.png"))) == 3


def test_ocr_weights_need_a_caption(capsys):
    code, _, err = run(capsys, "image-posts", "--dataset", str(SAMPLES / "clef2020"), "--ocr-weights", "1,2")
    assert code == 2 and "--caption half" in err


def test_image_posts_refuses_an_unknown_template(capsys):
    code, _, err = run(capsys, "image-posts", "--dataset", str(SAMPLES / "clef2020"), "--templates", "polaroid")
    assert code == 2 and "polaroid" in err


def test_dup_bench_finds_edited_copies_and_cleans_up(capsys, embedder, store):
    code, out, _ = run(capsys, "image-dup-bench", "--images", "12", "--stored", "300", "--queries", "10")
    result = json.loads(out)
    assert code == 0 and result["kept"] + result["dropped_low_quality"] == 12
    assert result["edits"]["jpeg_q30"]["recall"] >= 0.9
    assert result["edits"]["flip_horizontal"]["recall"] >= 0.9  # the 8 orientations
    assert result["false_matches"]["own_hash"]["within_threshold"] == 0
    run_ = result["latency"]["runs"][0]
    assert run_["stored"] == 300 and run_["bulk_failed"] == 0
    # what the hashes say is within the distance, OpenSearch finds first
    assert run_["top1_is_original"] == run_["original_within_distance"]
    assert not store.indices_matching(f"{result['latency']['index']}-v*")


def test_the_sample_image_post_finds_its_fact_check_by_its_text(settings, store, embedder, sample_alias):
    from plugin.image.stage import analyse
    from plugin.search.matcher import Matcher, MatchRequest
    from plugin.search.retrieval import load_configs

    analysis = analyse((SAMPLES / "images" / "russian-flag-texas-capitol.png").read_bytes(), settings)
    assert "Russian flag flies at Texas Capitol" in " ".join(analysis.ocr.text.split())
    matcher = Matcher(store, embedder, settings, alias=sample_alias, config=load_configs(None)["factsieve"])
    result = matcher.match(MatchRequest(text=analysis.ocr.text, k=5))
    assert result.matches[0]["id"] == "clef-21"
