"""A fact-check's image at ingest, without the image stage: where the bytes come from, which
record fields and ClaimReview shapes name them, and how the pipeline reports an image it cannot
read."""
import base64
import json

import pytest

from plugin.errors import BadInput, ContentTooLarge, UnsupportedContentType
from plugin.ingest import Format, IngestReport, parse_bytes, read_records
from plugin.image.inputs import decode_base64, read_image_file
from plugin.ingest.images import image_bytes, image_step
from plugin.ingest.pipeline import read_images, to_document, to_factcheck
from plugin.models import FactCheck

PIXELS = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def fc(**fields):
    return FactCheck(claim="The moon is made of cheese", lang="en", **fields)


# -- record fields ---------------------------------------------------------------------------
def test_image_fields_are_read_not_stored():
    raw = next(parse_bytes(json.dumps({"claim": "c", "image_url": "https://img.example/a.png",
                                       "image_base64": "QUJD", "image_path": "a.png"}).encode(), "jsonl"))
    record = to_factcheck(raw)
    assert (record.image_url, record.image_base64, record.image_path) == (
        "https://img.example/a.png", "QUJD", "a.png")
    assert record.has_image and not record.extra  # not kept under extra either
    doc = to_document(record, None, "now")
    assert not {"image_url", "image_base64", "image_path", "image"} & set(doc)
    assert to_document(record, None, "now", {"sha256": "ab"})["image"] == {"sha256": "ab"}
    assert "QUJD" not in repr(record)


def test_an_image_url_must_be_http():
    assert "image_url: not an http(s) URL" in to_factcheck(
        next(parse_bytes(b'{"claim": "c", "image_url": "file:///etc/passwd"}', "jsonl")))


def test_a_relative_image_path_is_read_from_the_files_folder(tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / "f.jsonl").write_text(
        '{"claim": "a", "image_path": "img/a.png"}\n{"claim": "b", "image_path": "/abs/b.png"}\n'
        '{"claim": "c"}\n', encoding="utf-8")
    records = list(read_records([feed / "f.jsonl"]))
    assert [r.data.get("image_path") for r in records] == [str(feed / "img" / "a.png"), "/abs/b.png", None]
    body = next(parse_bytes(b'{"claim": "a", "image_path": "img/a.png"}', "jsonl"))
    assert body.data["image_path"] == "img/a.png"  # a body has no folder


# -- ClaimReview -----------------------------------------------------------------------------
def claimreview(**extra):
    return {"@context": "https://schema.org", "@type": "ClaimReview", "claimReviewed": "c",
            "url": "https://fc.example/1", **extra}


@pytest.mark.parametrize("extra, image_url", [
    ({"image": "https://fc.example/thumb.jpg"}, "https://fc.example/thumb.jpg"),
    ({"image": {"@type": "ImageObject", "url": "https://fc.example/u.jpg"}}, "https://fc.example/u.jpg"),
    ({"image": {"@type": "ImageObject", "contentUrl": "https://fc.example/c.jpg",
                "url": "https://fc.example/page"}}, "https://fc.example/c.jpg"),
    ({"image": [{"@type": "ImageObject"}, "https://fc.example/2.jpg"]}, "https://fc.example/2.jpg"),
    ({"itemReviewed": {"@type": "Claim", "appearance": {
        "@type": "ImageObject", "contentUrl": "https://social.example/meme.jpg"}},
      "image": "https://fc.example/thumb.jpg"}, "https://social.example/meme.jpg"),
    ({"itemReviewed": {"@type": "Claim", "appearance": [
        {"@type": "CreativeWork", "url": "https://social.example/post/1"},
        {"@type": "SocialMediaPosting", "url": "https://social.example/post/2",
         "image": {"@type": "ImageObject", "url": "https://social.example/2.jpg"}}]}},
     "https://social.example/2.jpg"),
    ({"itemReviewed": {"@type": "Claim", "appearance": {"@type": "CreativeWork",
                                                        "url": "https://social.example/p"}}}, None),
    ({}, None),
])
def test_claimreview_image(extra, image_url):
    raw = next(parse_bytes(json.dumps(claimreview(**extra)).encode(), Format.claimreview))
    assert raw.error is None
    assert raw.data.get("image_url") == image_url


def test_claimreview_image_by_reference():
    doc = {"@graph": [claimreview(image={"@id": "#img"}),
                      {"@id": "#img", "@type": "ImageObject", "contentUrl": "https://fc.example/r.png"}]}
    raw = next(parse_bytes(json.dumps(doc).encode(), Format.claimreview))
    assert raw.data["image_url"] == "https://fc.example/r.png"


# -- bytes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    base64.b64encode(PIXELS).decode(),
    "data:image/png;base64," + base64.b64encode(PIXELS).decode(),
    "\n".join(base64.encodebytes(PIXELS).decode().split()) + "\n",
    base64.b64encode(PIXELS).decode().rstrip("="),
])
def test_base64_forms(text):
    assert decode_base64(text, 4096) == PIXELS


def test_base64_refusals():
    with pytest.raises(BadInput, match="image_base64 is not valid base64"):
        decode_base64("not base64!", 4096, "image_base64")
    with pytest.raises(ContentTooLarge, match="image_base64 is larger than 1,024 bytes"):
        decode_base64(base64.b64encode(PIXELS).decode(), 1024, "image_base64")


def test_read_file(tmp_path):
    (tmp_path / "a.png").write_bytes(PIXELS)
    assert read_image_file(str(tmp_path / "a.png"), 4096, "image_path") == PIXELS
    with pytest.raises(ContentTooLarge, match="larger than 1,024 bytes"):
        read_image_file(str(tmp_path / "a.png"), 1024, "image_path")
    with pytest.raises(BadInput, match="does not exist"):
        read_image_file(str(tmp_path / "b.png"), 4096, "image_path")
    with pytest.raises(BadInput, match="is not a file"):
        read_image_file(str(tmp_path), 4096, "image_path")


def test_where_the_bytes_come_from(settings, tmp_path):
    (tmp_path / "a.png").write_bytes(PIXELS)
    fetched = []

    def fetch(url, _settings):
        fetched.append(url)
        return b"from " + url.encode()

    b64 = base64.b64encode(PIXELS).decode()
    url = "https://img.example/a.png"
    assert image_bytes(fc(image_base64=b64, image_url=url), settings, local_files=False, fetch=fetch) == PIXELS
    assert image_bytes(fc(image_path=str(tmp_path / "a.png"), image_url=url), settings,
                       local_files=True, fetch=fetch) == PIXELS
    assert not fetched  # the bytes at hand are preferred
    assert image_bytes(fc(image_url=url), settings, local_files=False, fetch=fetch) == b"from " + url.encode()
    assert image_bytes(fc(), settings, local_files=True, fetch=fetch) is None
    with pytest.raises(BadInput, match="image_path names a local file, which only the CLI's `factsieve "
                                       "ingest` reads; send the image as image_base64 or image_url"):
        image_bytes(fc(image_path=str(tmp_path / "a.png")), settings, local_files=False)


# -- the pipeline's image step ---------------------------------------------------------------
class Analysis:
    def __init__(self, source):
        self.source = source

    def to_source(self):
        return self.source


def test_read_images_reports_what_it_cannot_read():
    def step(record):
        if record.image_url.endswith("svg"):
            raise UnsupportedContentType(f"image_url {record.image_url!r} is image/svg+xml, not a raster image")
        return Analysis({"sha256": record.image_url[-1]})

    items = [("f:1", fc()), ("f:2", fc(image_url="https://i.example/a")),
             ("f:3", fc(image_url="https://i.example/x.svg")), ("f:4", fc(image_url="https://i.example/b"))]
    report = IngestReport()
    out = [(ref, image) for ref, _, image in read_images(items, step, report)]
    assert out == [("f:1", None), ("f:2", {"sha256": "a"}), ("f:4", {"sha256": "b"})]
    assert report.rejects == [{"record": "f:3", "reason": "image: image_url 'https://i.example/x.svg' "
                                                          "is image/svg+xml, not a raster image"}]
    report = IngestReport()
    assert [ref for ref, _, _ in read_images(items, None, report)] == ["f:1"]
    assert report.rejected == 3 and report.rejects[0]["reason"].startswith("image: this ingest reads no images")


def test_image_step_without_an_image_is_a_programming_error(settings):
    with pytest.raises(BadInput, match="no image"):
        image_step(settings)(fc())


def test_images_are_read_concurrently_and_come_out_in_input_order():
    import threading
    import time

    running, most = [0], [0]
    lock = threading.Lock()

    def step(record):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05 if record.image_url.endswith(("0", "3")) else 0.01)
        with lock:
            running[0] -= 1
        if record.image_url.endswith("5"):
            raise BadInput("image_url is broken")
        return Analysis({"n": record.image_url[-1]})

    items = [(f"f:{i}", fc(image_url=f"https://i.example/{i}") if i % 3 else fc()) for i in range(10)]
    report = IngestReport()
    out = [(ref, image and image["n"]) for ref, _, image in read_images(items, step, report, threads=3)]
    assert out == [("f:0", None), ("f:1", "1"), ("f:2", "2"), ("f:3", None), ("f:4", "4"),
                   ("f:6", None), ("f:7", "7"), ("f:8", "8"), ("f:9", None)]
    assert report.rejects == [{"record": "f:5", "reason": "image: image_url is broken"}]
    assert 1 < most[0] <= 3


def test_a_csv_cell_holds_an_image_in_base64():
    b64 = base64.b64encode(PIXELS * 200).decode()  # over the csv module's default 128 KiB cell
    assert len(b64) > 131072
    body = f"claim,image_base64\nMoon cheese,{b64}\n".encode()
    [raw] = list(parse_bytes(body, Format.csv))
    assert raw.error is None and decode_base64(raw.data["image_base64"], 1 << 20) == PIXELS * 200
