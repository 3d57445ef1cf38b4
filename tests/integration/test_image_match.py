"""Image posts matched end to end: real Tesseract, real PDQ, real OpenSearch (and a real worker
for ``/v1/posts``). The pictures are drawn with Pillow and DejaVu (``tests.image_drawing``)."""
from __future__ import annotations

import base64
import io
import json
import uuid

import pytest

from tests.image_drawing import card, encode, meme, photo
from tests.integration.conftest import poll_job, problem_of

pytestmark = pytest.mark.integration

PHOTO_CLAIM = "A shark swam down a flooded highway in Houston after the hurricane."
MEME_TEXT = "Bill Gates wants to microchip everyone with the vaccine"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.fixture(scope="module")
def image_app(api_settings, store, embedder):
    """An app over an alias of its own: the API fixture fact-checks plus two with images (a
    photo and a meme), ingested through the normal ingest path (``image_base64``)."""
    from api import create_app
    from plugin.ingest import Format, parse_bytes, read_records
    from plugin.service.services import Services
    from tests.conftest import _cleanup
    from tests.integration.conftest import API_FACTCHECKS

    alias = f"fs-test-img-{uuid.uuid4().hex[:10]}"
    settings = api_settings.model_copy(update={"index": alias})
    services = Services(settings, store=store, embedder=embedder)
    services.factchecks.ensure()
    extra = [{"id": "img-photo", "claim": PHOTO_CLAIM, "url": "https://checks.example.org/shark",
              "rating": "False", "lang": "en"},
             {"id": "img-meme", "claim": "Bill Gates plans to implant microchips through vaccines.",
              "url": "https://checks.example.org/gates-chips", "rating": "False", "lang": "en"}]
    images = {"img-photo": encode(photo(7)), "img-meme": encode(meme(MEME_TEXT, 3))}
    for record in extra:
        record["image_base64"] = b64(images[record["id"]])
    records = list(read_records([API_FACTCHECKS], Format.jsonl))
    records += list(parse_bytes("\n".join(json.dumps(r) for r in extra).encode(), Format.jsonl, "extra"))
    report = services.factchecks.ingest(records)  # the images read as ingest reads them
    assert report.rejected == 0, report.rejects
    stored = store.search(alias, {"query": {"ids": {"values": ["img-photo"]}}})["hits"]["hits"][0]
    assert stored["_source"]["image"]["pdq"]
    app = create_app(settings, services=services)
    yield app
    _cleanup(store, alias)


@pytest.fixture
def image_client(image_app):
    return image_app.test_client()


def signals_of(match):
    return [s["signal"] for s in match["signals"]]


def test_an_image_only_post_finds_its_fact_check_by_the_text_read_from_it(image_client, auth):
    post = card("5G mobile networks spread the coronavirus. Share before they delete this!")
    resp = image_client.post("/v1/match", json={"image": b64(encode(post))}, headers=auth)
    assert resp.status_code == 200, resp.data
    body = resp.get_json()
    assert "5G" in body["image"]["ocr"]["text"]
    top = body["matches"][0]
    assert top["id"] == "api-2" and signals_of(top) == ["ocr"]
    assert all(name.startswith("ocr:") for name in top["explain"])


def test_a_reencoded_resized_copy_of_a_fact_checked_image_is_found_by_its_hash(image_client, auth):
    im = photo(7)
    small = im.resize((int(im.width * 0.6), int(im.height * 0.6)))
    data = encode(small, "JPEG", quality=40)
    # URL-safe base64 in a data: URL, alongside a caption about something else
    value = "data:image/jpeg;base64," + base64.urlsafe_b64encode(data).decode().rstrip("=")
    resp = image_client.post("/v1/match", json={"image": value, "text": "unbelievable, look at this"},
                             headers=auth)
    assert resp.status_code == 200, resp.data
    matches = resp.get_json()["matches"]
    top = matches[0]
    assert top["id"] == "img-photo" and top["rank"] == 1
    assert len({m["id"] for m in matches}) == len(matches)  # found both ways: listed once
    same = top["signals"][0]
    assert same["signal"] == "same-image" and same["distance"] <= 31


def test_a_cropped_meme_still_finds_its_fact_check_through_its_text(image_client, auth):
    im = meme(MEME_TEXT, 3)
    w, h = im.size
    cropped = im.crop((int(w * 0.05), int(h * 0.05), int(w * 0.95), int(h * 0.95)))  # 10 % off
    files = {"image": (io.BytesIO(encode(cropped, "JPEG", quality=85)), "meme.jpg", "image/jpeg")}
    resp = image_client.post("/v1/match", data={**files, "lang": "en", "k": "3"}, headers=auth,
                             content_type="multipart/form-data")
    assert resp.status_code == 200, resp.data
    body = resp.get_json()
    ids = [m["id"] for m in body["matches"]]
    assert len(ids) <= 3 and ids[0] == "img-meme", body
    assert "ocr" in signals_of(body["matches"][0])


@pytest.mark.parametrize("payload, status, words", [
    ({"image": "@@not base64@@"}, 422, "base64"),
    ({"image": b64(b"GIF89a\x01\x00garbage")}, 422, ""),
    ({"image": b64(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)}, 422, ""),
    ({"image": b64(b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>')}, 415, ""),
    ({"image_url": "http://127.0.0.1:9/meme.png"}, 422, ""),
    ({"image": b64(b"x"), "image_url": "https://example.org/a.png"}, 422, "not both"),
    ({"k": 3}, 422, "image"),
], ids=["not-base64", "broken-gif", "broken-png", "svg", "private-url", "both", "neither"])
def test_bad_images_are_4xx_problems(image_client, auth, payload, status, words):
    resp = image_client.post("/v1/match", json=payload, headers=auth)
    body = problem_of(resp)
    assert resp.status_code == status, body
    assert words in json.dumps(body)


def test_a_decompression_bomb_is_413(image_client, auth):
    from PIL import Image

    bomb = encode(Image.new("1", (20000, 20000)), "PNG")  # 400 M pixels in a few kB
    resp = image_client.post("/v1/match", json={"image": b64(bomb)}, headers=auth)
    assert resp.status_code == 413 and problem_of(resp)


def test_an_image_over_the_byte_limit_is_413_before_it_is_decoded(image_client, auth, api_settings):
    big = b"\xff\xd8" + b"\x00" * (api_settings.image_max_bytes + 10)
    resp = image_client.post("/v1/match", json={"image": b64(big)}, headers=auth)
    assert resp.status_code == 413 and problem_of(resp)


def test_the_openapi_document_takes_an_image_as_json_or_multipart(image_client):
    spec = image_client.get("/openapi.json").get_json()
    body = spec["paths"]["/v1/match"]["post"]["requestBody"]["content"]
    assert body["multipart/form-data"]["schema"]["properties"]["image"]["format"] == "binary"
    props = spec["components"]["schemas"]["MatchIn"]["properties"]
    assert {"image", "image_url", "text"} <= set(props)


def test_an_image_post_through_a_worker_is_done_with_signals(client, auth, worker, receiver):
    hook = client.post("/v1/webhooks", json={"url": receiver.url("/image-posts"), "events": ["post.matched"]},
                       headers=auth)
    assert hook.status_code == 201, hook.data
    post_id = f"img-{uuid.uuid4().hex[:8]}"
    image = encode(card("5G mobile networks spread the coronavirus. Wake up!"))
    resp = client.post("/v1/posts", json={"id": post_id, "image": b64(image), "lang": "en"}, headers=auth)
    assert resp.status_code == 202, resp.data
    job = poll_job(client, auth, resp.get_json()["job_id"], timeout=120)
    assert job["status"] == "succeeded", job
    match = job["result"]["match"]
    assert match["matches"][0]["id"] == "api-2" and signals_of(match["matches"][0]) == ["ocr"]
    assert "5G" in match["image"]["ocr"]["text"]
    from tests.integration.conftest import wait_for

    got = wait_for(lambda: [json.loads(r["body"]) for r in receiver.received("/image-posts")
                            if json.loads(r["body"])["data"]["post"]["id"] == post_id],
                   timeout=30, what="the post.matched delivery")
    data = got[0]["data"]
    assert "5G" in data["post"]["text"] and data["match"]["matches"][0]["signals"] == [{"signal": "ocr"}]
    client.delete(f"/v1/webhooks/{hook.get_json()['id']}", headers=auth)
    # the same post again (the same image, as a multipart file part) is the same job; another
    # image under its id is a 409
    again = client.post("/v1/posts", data={"id": post_id, "lang": "en",
                                           "image": (io.BytesIO(image), "post.png", "image/png")},
                        headers=auth, content_type="multipart/form-data")
    assert again.status_code == 202 and again.get_json()["duplicate"] is True, again.data
    other = client.post("/v1/posts", json={"id": post_id, "image": b64(encode(card("other"))), "lang": "en"},
                        headers=auth)
    assert other.status_code == 409 and problem_of(other)


def test_an_images_text_is_the_claim_verified(client, auth, worker):
    image = encode(card("The Great Wall of China can be seen from the moon"))
    resp = client.post("/v1/verify", json={"image": b64(image), "config": "lookup", "lang": "en"}, headers=auth)
    assert resp.status_code == 202, resp.data
    job = poll_job(client, auth, resp.get_json()["job_id"], timeout=120)
    assert job["status"] == "succeeded", job
    assert "Great Wall" in job["result"]["claim"]
    assert job["result"]["stage"] == "previously-fact-checked"
    assert job["result"]["citations"][0]["url"] == "https://checks.example.org/great-wall-moon"
    blank = encode(card(""))
    resp = client.post("/v1/verify", json={"image": b64(blank), "config": "lookup"}, headers=auth)
    assert resp.status_code == 422 and "no text was read" in problem_of(resp)["detail"]


# -- the CLI --------------------------------------------------------------------------------------
from tests.integration.test_cli import cli_alias, run  # noqa: E402,F401 (a fixture, and its runner)


def test_factsieve_match_image(capsys, cli_alias, tmp_path):
    from tests.integration.conftest import API_FACTCHECKS

    assert run(capsys, "init")[0] == 0
    assert run(capsys, "ingest", "-q", str(API_FACTCHECKS))[0] == 0
    path = tmp_path / "post.png"
    path.write_bytes(encode(card("Drinking hot water with lemon cures COVID-19, doctors say")))
    code, out, _ = run(capsys, "match", "--image", str(path), "--lang", "en", "-k", "3", "--json")
    assert code == 0, out
    body = json.loads(out)
    assert "lemon" in body["image"]["ocr"]["text"].lower()
    assert body["matches"][0]["id"] == "api-1" and body["matches"][0]["signals"] == [{"signal": "ocr"}]
    code, out, _ = run(capsys, "match", "a caption", "--image", str(path), "-k", "3")
    assert code == 0 and "text read from the image: 'Drinking hot water" in out
    assert "found by: ocr" in out
    code, _, err = run(capsys, "match", "--image", str(tmp_path / "missing.png"))
    assert code == 2 and "cannot read the image" in err
