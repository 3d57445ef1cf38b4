"""The same-image query on a real fact-check index: candidates by chunk terms, exact distance by
painless, on hand-made hashes whose distances are known."""
import random

import pytest

from plugin.image.model import ImageAnalysis, PdqHash
from plugin.image.queries import read_image_hits, same_image_query
from plugin.index.templates import IndexSpec, ensure_index

pytestmark = pytest.mark.integration

RNG = random.Random(25)


def random_hash() -> str:
    return f"{RNG.getrandbits(256):064x}"


def flip(hex_hash: str, bits) -> str:
    value = int(hex_hash, 16)
    for b in bits:
        value ^= 1 << b
    return f"{value:064x}"


def spread(k: int) -> list[int]:
    """k bit positions spread over the 16 chunks as evenly as possible (two per chunk before a
    third anywhere): the hardest case for candidate selection."""
    return [16 * (i % 16) + i // 16 for i in range(k)]


BASE = random_hash()
SHA = {name: f"{i:064x}" for i, name in enumerate(
    ["same-hash", "near5", "spread31", "spread32", "far60", "flat", "rotated", "other"], 1)}
ROTATIONS = [random_hash() for _ in range(8)]  # a query's 8 orientations, unrelated to BASE


def image(name: str, pdq: str | None, *, text_heavy=False, ocr=None) -> dict:
    from plugin.image.model import OcrResult

    analysis = ImageAnalysis(sha256=SHA[name], width=640, height=480, format="PNG",
                             pdq=PdqHash(pdq, 90) if pdq else None, text_heavy=text_heavy,
                             ocr=OcrResult(ocr, "eng", "en", 90.0, "image", 0.3) if ocr else None)
    return analysis.to_source()


DOCS = {
    "same-hash": image("same-hash", BASE, text_heavy=True, ocr="SHARE BEFORE DELETED"),
    "near5": image("near5", flip(BASE, [3, 70, 130, 200, 255])),
    "spread31": image("spread31", flip(BASE, spread(31))),
    "spread32": image("spread32", flip(BASE, spread(32))),
    "far60": image("far60", flip(BASE, range(0, 240, 4))),
    "flat": image("flat", None),  # quality too low: stored without a hash
    "rotated": image("rotated", flip(ROTATIONS[5], range(0, 100, 10))),
    "other": image("other", random_hash()),
    "no-image": None,
}


@pytest.fixture(scope="module")
def alias(store):
    import uuid

    name = f"fs-test-img-{uuid.uuid4().hex[:8]}"
    ensure_index(store, IndexSpec(alias=name, model="test/none", dimension=384))
    actions = [{"_op_type": "index", "_index": name, "_id": doc_id,
                "_source": {"id": doc_id, "claim": f"claim {doc_id}", **({"image": img} if img else {})}}
               for doc_id, img in DOCS.items()]
    results = list(store.bulk(actions))
    assert all(ok for ok, _ in results), results
    store.refresh(name)
    yield name
    store.delete_index(f"{name}-v*")
    store.delete_index_template(f"factsieve-{name}")


def search(store, alias, hashes, **kwargs):
    return read_image_hits(store.search(alias, same_image_query(hashes, max_distance=31, **kwargs)))


def test_hits_are_exactly_the_images_within_31_bits_closest_first(store, alias):
    hits = search(store, alias, [BASE])
    assert [(h.id, h.distance, h.exact) for h in hits] == [
        ("same-hash", 0, False), ("near5", 5, False), ("spread31", 31, False)]
    assert hits[0].text_heavy and hits[0].ocr_text == "SHARE BEFORE DELETED"
    assert not hits[1].text_heavy and hits[1].ocr_text is None


def test_the_same_file_is_distance_0_and_exact_even_without_a_hash(store, alias):
    hits = search(store, alias, [BASE], sha256=SHA["flat"])
    assert [(h.id, h.distance, h.exact) for h in hits][:2] == [("flat", 0, True), ("same-hash", 0, False)]
    assert [h.id for h in search(store, alias, [], sha256=SHA["far60"])] == ["far60"]
    hits = search(store, alias, [BASE], sha256=SHA["near5"])
    # the same file is distance 0 although its hash is 5 bits off, and sorts first
    assert [(h.id, h.distance, h.exact) for h in hits] == [
        ("near5", 0, True), ("same-hash", 0, False), ("spread31", 31, False)]


def test_a_query_of_eight_orientations_takes_the_minimum(store, alias):
    hits = search(store, alias, ROTATIONS)
    assert [(h.id, h.distance) for h in hits] == [("rotated", 10)]
    others = search(store, alias, [*ROTATIONS[:5], *ROTATIONS[6:], BASE])  # without ROTATIONS[5]
    assert [h.id for h in others] == ["same-hash", "near5", "spread31"]
    both = search(store, alias, [*ROTATIONS, BASE])
    assert [(h.id, h.distance) for h in both] == [
        ("same-hash", 0), ("near5", 5), ("rotated", 10), ("spread31", 31)]


def test_filters_and_a_tighter_threshold(store, alias):
    body = same_image_query([BASE], max_distance=5, filters=[{"terms": {"id": ["near5", "spread31"]}}])
    assert [(h.id, h.distance) for h in read_image_hits(store.search(alias, body))] == [("near5", 5)]
