"""Fact-checks with images, end to end on the real image stage (Pillow, pdqhash, Tesseract) and
OpenSearch: base64 in JSON Lines, a ClaimReview's image URL from a local server the settings
allow, a local file through the CLI only, an ingest job as a worker runs it, and an index made
before images getting their mapping."""
import base64
import io
import json
import uuid

import pytest

from plugin.image.queries import read_image_hits, same_image_query
from plugin.index.templates import IndexSpec, ensure_index, install_index, template_bodies, template_properties
from plugin.ingest import Format, ingest, parse_bytes, read_records
from plugin.ingest.images import image_step
from tests.http_server import serving

pytestmark = pytest.mark.integration

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def meme(lines=("THE MOON IS MADE", "OF GREEN CHEESE"), fmt="PNG") -> bytes:
    """A photo-like picture (gradient and shapes, so its hash has structure) with a caption."""
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (640, 400))
    draw = ImageDraw.Draw(im)
    for y in range(400):
        draw.line([(0, y), (640, y)], fill=(30 + y // 3, 90, 160 - y // 4))
    for i in range(8):
        top = 40 + (i * 37) % 150
        draw.ellipse([40 + 70 * i, top, 120 + 70 * i, top + 80], fill=(200 - 20 * i, 40 + 25 * i, 90))
    draw.rectangle([0, 260, 640, 400], fill=(255, 255, 255))
    font = ImageFont.truetype(FONT, 40)
    for n, line in enumerate(lines):
        draw.text((20, 275 + 55 * n), line, font=font, fill=(0, 0, 0))
    out = io.BytesIO()
    im.save(out, fmt)
    return out.getvalue()


MEME = meme()


@pytest.fixture(scope="module")
def image_server():
    def answer(path, headers):
        kind, body = {"/meme.png": ("image/png", MEME)}.get(path, ("text/html", b"<html/>"))
        return 200, {"Content-Type": kind}, body

    with serving(answer) as srv:
        yield srv


@pytest.fixture
def img_settings(settings, image_server, make_alias):
    return settings.model_copy(update={"image_allowed_hosts": (image_server.origin,), "index": make_alias()})


def run_ingest(store, embedder, settings, records, *, local_files=False):
    ensure_index(store, IndexSpec(alias=settings.index, model=embedder.name, dimension=embedder.dim))
    return ingest(records, store=store, embedder=embedder, index=settings.index,
                  images=image_step(settings, local_files=local_files))


def test_jsonl_with_base64_images_one_good_one_broken(store, embedder, img_settings):
    body = "\n".join(json.dumps(r) for r in [
        {"id": "img-good", "claim": "The moon is made of green cheese", "lang": "en",
         "image_base64": base64.b64encode(MEME).decode()},
        {"id": "img-broken", "claim": "Another claim", "lang": "en",
         "image_base64": base64.b64encode(b"GIF89a but not really an image").decode()},
        {"id": "no-image", "claim": "A claim without an image", "lang": "en"},
    ]).encode()
    report = run_ingest(store, embedder, img_settings, parse_bytes(body, Format.jsonl))
    assert (report.indexed, report.rejected) == (2, 1), report.rejects
    assert report.rejects[0]["record"] == "body:2"
    assert report.rejects[0]["reason"].startswith("image: ")
    doc = store.get(img_settings.index, "img-good")
    image = doc["image"]
    assert len(image["pdq"]) == 64 and image["pdq_quality"] >= img_settings.pdq_min_quality
    assert image["pdq_c0"] == image["pdq"][:4] and isinstance(image["pdq_w3"], int)
    assert "CHEESE" in image["ocr_text"] and image["ocr_lang"] == "en"
    assert (image["width"], image["height"]) == (640, 400)
    assert not {"image_base64", "image_url", "image_path"} & set(doc) and "extra" not in doc
    assert "image" not in store.get(img_settings.index, "no-image")
    # the stored hash is found again from the same picture re-encoded as JPEG
    from plugin.image.stage import analyse

    query = analyse(meme(fmt="JPEG"), img_settings, lang="en", query=True, ocr=False)
    hits = read_image_hits(store.search(img_settings.index, same_image_query(
        query.query_hashes, max_distance=img_settings.pdq_max_distance, sha256=query.sha256)))
    assert [(h.id, h.exact) for h in hits] == [("img-good", False)] and hits[0].distance <= 31


def test_claimreview_image_url_from_an_allowed_server(store, embedder, img_settings, image_server):
    def review(n, url):
        return {"@type": "ClaimReview", "claimReviewed": f"claim {n}", "url": f"https://fc.example/{n}",
                "inLanguage": "en", "image": {"@type": "ImageObject", "contentUrl": url}}

    doc = {"@graph": [review(1, f"{image_server.origin}/meme.png"),
                      review(2, f"{image_server.origin}/page"),
                      review(3, "http://127.0.0.1:9/meme.png")]}
    records = list(parse_bytes(json.dumps(doc).encode(), Format.claimreview))
    report = run_ingest(store, embedder, img_settings, records)
    assert report.indexed == 1, report.rejects
    reasons = {r["record"]: r["reason"] for r in report.rejects}
    assert reasons["body:2"].startswith(f"image: image_url '{image_server.origin}/page' is text/html")
    assert "FACTSIEVE_IMAGE_ALLOWED_HOSTS" in reasons["body:3"]  # not this server's origin
    [hit] = store.search(img_settings.index, {"query": {"exists": {"field": "image.pdq"}}})["hits"]["hits"]
    assert hit["_source"]["claim"] == "claim 1" and "CHEESE" in hit["_source"]["image"]["ocr_text"]


def test_image_path_is_read_by_the_cli_only(store, embedder, img_settings, tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "meme.png").write_bytes(MEME)
    feed = tmp_path / "feed.jsonl"
    feed.write_text(json.dumps({"id": "from-file", "claim": "Moon cheese", "lang": "en",
                                "image_path": "img/meme.png"}) + "\n", encoding="utf-8")
    from plugin.service.services import Services

    services = Services(img_settings, store=store, embedder=embedder)
    refused = services.factchecks.ingest(read_records([feed]))  # as the API and jobs call it
    assert refused.rejected == 1 and "only the CLI's `factsieve ingest` reads" in refused.rejects[0]["reason"]
    report = services.factchecks.ingest(read_records([feed]), local_files=True)  # as the CLI does
    assert report.indexed == 1, report.rejects
    assert "CHEESE" in store.get(img_settings.index, "from-file")["image"]["ocr_text"]


def test_cli_ingest_reads_image_path(capsys, store, embedder, img_settings, tmp_path, monkeypatch):
    from cli.main import main

    (tmp_path / "meme.png").write_bytes(MEME)
    feed = tmp_path / "feed.jsonl"
    feed.write_text(json.dumps({"id": "cli-file", "claim": "Moon cheese", "lang": "en",
                                "image_path": "meme.png"}) + "\n", encoding="utf-8")
    monkeypatch.setenv("FACTSIEVE_INDEX", img_settings.index)
    monkeypatch.setenv("FACTSIEVE_REDIS_PREFIX", img_settings.index)
    ensure_index(store, IndexSpec(alias=img_settings.index, model=embedder.name, dimension=embedder.dim))
    assert main(["ingest", "-q", str(feed)]) == 0
    assert json.loads(capsys.readouterr().out)["indexed"] == 1
    assert store.get(img_settings.index, "cli-file")["image"]["pdq"]


def test_an_ingest_job_fetches_image_urls_in_the_worker(store, embedder, img_settings, image_server):
    from plugin.service.handlers import run_ingest as handle
    from plugin.service.jobs import JobKind
    from plugin.kv import KV
    from plugin.service.services import Services

    settings = img_settings.model_copy(update={"redis_prefix": f"fs-test-{uuid.uuid4().hex[:8]}",
                                               "jobs_index": f"{img_settings.index}-jobs"})
    services = Services(settings, store=store, embedder=embedder)
    body = json.dumps([{"id": "job-img", "claim": "Moon cheese", "lang": "en",
                        "image_url": f"{image_server.origin}/meme.png"},
                       {"id": "job-path", "claim": "A path", "image_path": "/etc/hostname"}])
    try:
        job, _ = services.jobs.create(JobKind.INGEST, {"format": "auto", "name": "body"}, body=body)
        result = handle(services, job)
        assert result["indexed"] == 1 and result["rejected"] == 1
        assert "image_path names a local file" in result["rejects"][0]["reason"]
        assert store.get(settings.index, "job-img")["image"]["sha256"]
    finally:
        KV(settings).delete_namespace()
        store.delete_index(f"{settings.jobs_index}-v*")
        store.delete_index_template(f"factsieve-{settings.jobs_index}")


def test_api_rejects_image_path_and_queues_bodies_with_images(fc_client, auth):
    resp = fc_client.post("/v1/fact-checks", headers=auth, json=[
        {"id": "api-ok", "claim": "A claim"},
        {"id": "api-path", "claim": "Another", "image_path": "/etc/passwd"}])
    assert resp.status_code == 200, resp.get_json()
    report = resp.get_json()
    assert report["indexed"] == 1 and report["rejects"][0]["record"] == "body:2"
    assert report["rejects"][0]["reason"].startswith("image: image_path names a local file")
    # the workers read images: queued (an image the job will reject, so that a session worker
    # serving another alias writes nothing)
    resp = fc_client.post("/v1/fact-checks", headers=auth, json=[
        {"id": "api-img", "claim": "A claim", "image_base64": "not an image!"}])
    assert resp.status_code == 202, resp.get_json()


def test_an_index_made_before_images_gets_the_image_mapping(store, make_alias):
    alias = make_alias()
    spec = IndexSpec(alias=alias, model="test/none", dimension=384)
    bodies = template_bodies(spec)
    fields = bodies[f"_component_template/factsieve-{alias}-factcheck-fields"]["template"]
    knn = bodies[f"_component_template/factsieve-{alias}-knn-384"]["template"]
    old = {k: v for k, v in template_properties(spec).items() if k != "image"}
    store.create_index(f"{alias}-v1", {
        "settings": {**fields["settings"], **knn["settings"]},
        "mappings": {"_meta": spec.meta(), "dynamic": False, "properties": old},
        "aliases": {alias: {}}})
    assert "image" not in store.mapping_properties(f"{alias}-v1")
    assert install_index(store, spec) == f"{alias}-v1"  # `factsieve init`
    mapped = store.mapping_properties(f"{alias}-v1")["image"]["properties"]
    assert mapped["pdq_c0"]["type"] == "keyword" and mapped["pdq_w0"]["type"] == "long"
    assert install_index(store, spec) == f"{alias}-v1"  # again: nothing to add, nothing fails


def test_a_body_with_more_images_than_one_job_may_read_is_refused_whole(api_settings, store, embedder,
                                                                       make_alias, auth):
    from api import create_app
    from plugin.service.services import Services

    settings = api_settings.model_copy(update={"index": make_alias(), "image_ingest_max_records": 2})
    client = create_app(settings, services=Services(settings, store=store, embedder=embedder)).test_client()
    body = [{"id": f"many-{i}", "claim": f"Claim {i}", "image_url": f"https://example.org/{i}.png"}
            for i in range(3)]
    resp = client.post("/v1/fact-checks", headers=auth, json=body)
    assert resp.status_code == 413 and resp.mimetype == "application/problem+json"
    assert "3 records with an image" in resp.get_json()["detail"]
    assert "FACTSIEVE_IMAGE_INGEST_MAX_RECORDS" in resp.get_json()["detail"]
