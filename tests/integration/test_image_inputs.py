"""Issue 35's image inputs through the real API (real OpenSearch, Redis, Tesseract): a page of
dense text is read within the OCR budget and the match goes on with a note; ``/v1/posts``
refuses at once what ``/v1/match`` refuses, before the post id is taken; a field given twice
in a multipart body (or a query parameter twice) is a 422 naming it, never one of them
silently dropped."""
from __future__ import annotations

import base64
import io
import uuid

import pytest

from tests.image_drawing import card, dense_text, encode, png_header
from tests.integration.conftest import problem_of

pytestmark = pytest.mark.integration


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'


@pytest.fixture(scope="module")
def tight_client(api_settings, store, embedder, api_corpus):
    """The API with a one-second OCR budget on the synchronous routes."""
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"ocr_api_budget_s": 1.0})
    return create_app(settings, services=Services(settings, store=store, embedder=embedder)).test_client()


def test_a_page_of_dense_text_matches_within_the_budget_with_a_note(tight_client, read_key):
    data = encode(dense_text())
    resp = tight_client.post("/v1/match", json={"image": b64(data), "lang": "en"},
                             headers={"Authorization": f"Bearer {read_key}"})
    assert resp.status_code == 200, resp.data
    body = resp.get_json()
    assert body["image"]["ocr"]["budget_spent"] is True
    assert any("stopped at its time budget" in note for note in body["notes"]), body["notes"]
    # and with a caption, the caption is still matched
    resp = tight_client.post("/v1/match", json={"image": b64(data), "text": "drinking hot water cures the flu"},
                             headers={"Authorization": f"Bearer {read_key}"})
    assert resp.status_code == 200 and resp.get_json()["image"]["ocr"]["budget_spent"] is True


@pytest.mark.parametrize("image, status", [
    ({"image": b64(png_header(50_000, 50_000))}, 413),
    ({"image": b64(SVG)}, 415),
    ({"image": b64(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)}, 422),
    ({"image": "@@not base64@@"}, 422),
    ({"image_url": "http://127.0.0.1:9200/"}, 422),
    ({"image_url": "http://localhost:6379/a.png"}, 422),
], ids=["50000x50000", "svg", "broken-png", "not-base64", "opensearch", "redis"])
def test_posts_refuse_at_once_what_match_refuses_and_keep_no_id(client, auth, image, status):
    matched = client.post("/v1/match", json=image, headers=auth)
    assert matched.status_code == status, problem_of(matched)
    post_id = f"img-check-{uuid.uuid4().hex[:10]}"
    resp = client.post("/v1/posts", json={"id": post_id, **image}, headers=auth)
    body = problem_of(resp)
    assert resp.status_code == status, body
    assert body["detail"] == problem_of(matched)["detail"]  # the same check said the same
    fixed = client.post("/v1/posts", json={"id": post_id, "image": b64(encode(card("A fixed image")))},
                        headers=auth)
    assert fixed.status_code == 202, fixed.data  # the id was not taken by the refused post


@pytest.mark.parametrize("route, fields", [
    ("/v1/match", {}),
    ("/v1/posts", {"id": "two-parts"}),
    ("/v1/verify", {"config": "lookup"}),
])
def test_two_image_parts_are_422_naming_the_field(client, auth, route, fields):
    one, two = encode(card("first image")), encode(card("second image"))
    data = {**fields, "image": [(io.BytesIO(one), "a.png", "image/png"), (io.BytesIO(two), "b.png", "image/png")]}
    resp = client.post(route, data=data, headers=auth, content_type="multipart/form-data")
    body = problem_of(resp)
    assert resp.status_code == 422, body
    assert [e["field"] for e in body["errors"]] == ["image"] and "more than once" in body["detail"]


def test_a_repeated_form_field_or_query_parameter_is_422(client, auth):
    png = encode(card("one image"))
    data = {"image": (io.BytesIO(png), "a.png", "image/png"), "lang": ["en", "es"]}
    resp = client.post("/v1/match", data=data, headers=auth, content_type="multipart/form-data")
    body = problem_of(resp)
    assert resp.status_code == 422 and [e["field"] for e in body["errors"]] == ["lang"], body
    # the image once as a file part and once as a field: the same rule
    data = {"image": [(io.BytesIO(png), "a.png", "image/png"), b64(png)]}
    resp = client.post("/v1/match", data=data, headers=auth, content_type="multipart/form-data")
    assert resp.status_code == 422 and problem_of(resp)["errors"][0]["field"] == "image"
    resp = client.get("/v1/webhooks/no-such-hook/deliveries?limit=5&limit=500", headers=auth)
    body = problem_of(resp)
    assert resp.status_code == 422 and body["errors"][0]["field"] == "limit", body
