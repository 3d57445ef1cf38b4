"""Near-duplicate images: how well a perceptual hash finds an edited copy of a fact-checked image,
how often it confuses different images, and what the same-image query costs in OpenSearch.

Synthetic photo-like images (``render.photo``, seeded) go through the served path: JPEG bytes →
``plugin.image.decode`` → ``plugin.image.pdq``. Recall per edit (``edits.EDITS``) counts an edited
copy as found when one of its query hashes (8 orientations, bar-stripped variants) is within the
served distance of the original's hash. False matches count different-image pairs within that
distance, over every pair of originals, with their own hashes and with the query hashes. Latency:
a throwaway index built from the fact-check template holds the originals' hashes plus random
256-bit hashes as distractors, queried with ``plugin.image.queries.same_image_query``; it is
deleted afterwards.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from plugin.lab.evaluate.metrics import percentile

#: the sizes synthetic originals are drawn in (as photos are shared: landscape, square, portrait)
SIZES = ((800, 600), (1024, 768), (640, 640), (1200, 800), (600, 800), (720, 1280))


def hex_matrix(hashes: Sequence[str]) -> Any:
    """``n`` 64-hex-digit hashes as an ``n × 32`` uint8 array."""
    import numpy as np

    if not hashes:
        return np.zeros((0, 32), dtype=np.uint8)
    return np.frombuffer(b"".join(bytes.fromhex(h) for h in hashes), dtype=np.uint8).reshape(-1, 32)


def distances(a: Any, b: Any) -> Any:
    """The ``len(a) × len(b)`` Hamming distances between two packed hash arrays (``hex_matrix``)."""
    import numpy as np

    popcount = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint16)
    return popcount[np.bitwise_xor(a[:, None, :], b[None, :, :])].sum(axis=2)


def false_matches(stored: Any, queries: Sequence[Any], max_distance: int) -> dict[str, Any]:
    """Different-image pairs within ``max_distance``: image ``i``'s query hashes (``queries[i]``,
    an array; its own hash alone for the plain count) against every stored hash ``j ≠ i``, the
    closest of them counting. Each unordered pair is counted once when every image queries with
    its stored hash alone, else each ordered pair (one image's query against another image)."""
    import numpy as np

    n = len(stored)
    same = all(len(q) == 1 and (q[0] == stored[i]).all() for i, q in enumerate(queries))
    found: list[Any] = []
    for i, q in enumerate(queries):
        others = stored[i + 1:] if same else np.delete(stored, i, axis=0)
        if len(q) and len(others):
            found.append(distances(q, others).min(axis=0))
    if not found:
        return {"pairs": 0, "within_threshold": 0, "min_distance": None, "p01_distance": None}
    d = np.concatenate(found)
    return {"pairs": int(len(d)), "within_threshold": int((d <= max_distance).sum()),
            "min_distance": int(d.min()), "p01_distance": float(np.percentile(d, 0.1)),
            "p1_distance": float(np.percentile(d, 1)), "p50_distance": float(np.percentile(d, 50)),
            "images": n}


def _hash_bytes(data: bytes, settings: Any) -> tuple[Any, tuple[str, ...]]:
    """The served path: decoded, then the image's own hash and its query hashes."""
    from plugin.image.decode import decode
    from plugin.image.pdq import hashes

    img = decode(data, max_bytes=settings.image_max_bytes, max_pixels=settings.image_max_pixels).image
    return hashes(img, min_quality=settings.pdq_min_quality)


def hash_originals(settings: Any, *, n_images: int, seed: int,
                   log: Callable[[str], None] = lambda m: None) -> tuple[list[dict[str, Any]], int]:
    """``n_images`` synthetic originals as JPEG bytes, hashed as served; those whose hash quality
    is below ``pdq_min_quality`` are dropped (not stored, not queried). Returns the kept ones
    (``seed``, ``bytes``, ``hash``, ``quality``, ``query_hashes``) and the number dropped."""
    import numpy as np

    from plugin.lab.images.edits import encode
    from plugin.lab.images.render import photo

    rng = np.random.default_rng(seed)
    kept: list[dict[str, Any]] = []
    dropped = 0
    for i in range(n_images):
        size = SIZES[int(rng.integers(0, len(SIZES)))]
        data = encode(photo(seed * 1_000_003 + i, size))
        pdq, queries = _hash_bytes(data, settings)
        if pdq.quality < settings.pdq_min_quality:
            dropped += 1
            continue
        kept.append({"seed": i, "bytes": data, "hash": pdq.hex, "quality": pdq.quality,
                     "query_hashes": queries})
        if (i + 1) % 100 == 0:
            log(f"originals: {i + 1}/{n_images} hashed, {dropped} dropped")
    return kept, dropped


Probe = tuple[int, tuple[str, ...], bool]  # (original's index, an edited copy's query hashes, within distance)


def edit_recall(originals: list[dict[str, Any]], settings: Any, *,
                log: Callable[[str], None] = lambda m: None) -> tuple[dict[str, Any], list[Probe]]:
    """Per edit: the share of edited copies found (a query hash within ``pdq_max_distance`` of
    the original's hash), with the query hashes (``served``) and with the edited image's own hash
    only (``own_hash``, for comparison), and the distances' median and 95th percentile. Also
    returns ``(original index, query hashes, within the distance)`` of every edited copy, for the
    latency run."""
    import io

    from PIL import Image

    from plugin.image.pdq import hamming
    from plugin.lab.images.edits import EDITS, encode

    limit = settings.pdq_max_distance
    out: dict[str, Any] = {}
    probes: list[Probe] = []
    for name, edit in EDITS.items():
        served, own, below, dists = 0, 0, 0, []
        t0 = time.perf_counter()
        for k, orig in enumerate(originals):
            edited = edit(Image.open(io.BytesIO(orig["bytes"])).convert("RGB"))
            data = encode(edited, quality=30) if name == "jpeg_q30" else encode(edited)
            pdq, queries = _hash_bytes(data, settings)
            if not queries:
                below += 1
                continue
            d = min(hamming(q, orig["hash"]) for q in queries)
            dists.append(d)
            served += d <= limit
            own += hamming(pdq.hex, orig["hash"]) <= limit
            probes.append((k, queries, d <= limit))
        n = len(originals)
        out[name] = {"recall": round(served / n, 4) if n else None,
                     "recall_own_hash": round(own / n, 4) if n else None,
                     "below_quality": below,
                     "distance_p50": percentile(dists, 0.5), "distance_p95": percentile(dists, 0.95)}
        log(f"{name}: recall {out[name]['recall']} ({time.perf_counter() - t0:.0f} s)")
    return out, probes


def random_hashes(n: int, seed: int) -> list[str]:
    import numpy as np

    raw = np.random.default_rng(seed).integers(0, 256, size=(n, 32), dtype=np.uint8)
    return [bytes(row).hex() for row in raw]


def _doc(doc_id: str, hex_hash: str, quality: int) -> dict[str, Any]:
    import hashlib

    from plugin.image.model import ImageAnalysis, PdqHash

    image = ImageAnalysis(sha256=hashlib.sha256(doc_id.encode()).hexdigest(), width=800, height=600,
                          format="JPEG", pdq=PdqHash(hex_hash, quality))
    return {"claim": f"bench image {doc_id}", "lang": "en", "image": image.to_source()}


def candidate_query(body: dict[str, Any]) -> dict[str, Any] | None:
    """The candidate-selecting part of a same-image body (inside its ``script_score``), if any."""
    q = body.get("query", {})
    return q.get("script_score", {}).get("query") if "script_score" in q else None


def query_latency(store: Any, settings: Any, dimension: int, model: str, originals: list[dict[str, Any]],
                  probes: list[Probe], *, sizes: Sequence[int], n_queries: int,
                  seed: int, log: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """Same-image queries through OpenSearch at each stored-hash count in ``sizes``: the
    originals plus random distractors, in a throwaway index (deleted afterwards)."""
    import random

    from plugin.image.queries import read_image_hits, same_image_query
    from plugin.index.templates import IndexSpec, ensure_index

    alias = f"fs-lab-pdq-{uuid.uuid4().hex[:8]}"
    ensure_index(store, IndexSpec(alias=alias, model=model, dimension=dimension))
    chosen = random.Random(seed).sample(probes, min(n_queries, len(probes)))
    out: dict[str, Any] = {"index": alias, "queries": len(chosen),
                           "distractors": "uniformly random 256-bit hashes"}
    try:
        def actions(docs: Sequence[tuple[str, str, int]]) -> Any:
            for doc_id, h, q in docs:
                yield {"_index": alias, "_id": doc_id, "_source": _doc(doc_id, h, q)}

        stored = 0
        results = []
        for size in sorted(sizes):
            docs: list[tuple[str, str, int]] = []
            if stored == 0:
                docs += [(f"img-{o['seed']}", o["hash"], o["quality"]) for o in originals][:size]
            extra = max(0, size - stored - len(docs))
            docs += [(f"rnd-{stored + j}", h, 100) for j, h in enumerate(random_hashes(extra, seed + size))]
            t0 = time.perf_counter()
            failed = sum(1 for ok, _ in store.bulk(actions(docs), chunk_size=2000) if not ok)
            store.refresh(alias)
            stored += len(docs) - failed
            merge_s = store.force_merge(alias, lease_timeout_s=0.0)
            log(f"{stored} hashes stored ({time.perf_counter() - t0:.0f} s)")
            walls, took, candidates, found, within = [], [], [], 0, 0
            for k, queries, near in chosen:
                body = same_image_query(list(queries), max_distance=settings.pdq_max_distance, size=10)
                t1 = time.perf_counter()
                resp = store.search(alias, body)
                walls.append((time.perf_counter() - t1) * 1e3)
                took.append(float(resp.get("took", 0)))
                hits = read_image_hits(resp)
                found += bool(hits) and hits[0].id == f"img-{originals[k]['seed']}"
                within += near
            for k, queries, _ in chosen[:50]:
                cq = candidate_query(same_image_query(list(queries), max_distance=settings.pdq_max_distance))
                if cq is not None:
                    r = store.search(alias, {"size": 0, "track_total_hits": True, "query": cq})
                    candidates.append(int(r["hits"]["total"]["value"]))
            results.append({"stored": stored, "bulk_failed": failed, "force_merge_s": round(merge_s, 1),
                            "wall_ms": {"p50": round(percentile(walls, 0.5), 1),
                                        "p95": round(percentile(walls, 0.95), 1)},
                            "took_ms": {"p50": percentile(took, 0.5), "p95": percentile(took, 0.95)},
                            # the original ranked first, and how many queries had it within the
                            # distance (what OpenSearch should find: the edits mix found and missed)
                            "top1_is_original": found, "original_within_distance": within,
                            "candidates": None if not candidates else {
                                "p50": percentile(candidates, 0.5), "p95": percentile(candidates, 0.95),
                                "share_p50": round(percentile(candidates, 0.5) / stored, 5)}})
        out["runs"] = results
    finally:
        store.delete_index(f"{alias}-v*")
        store.delete_index_template(f"factsieve-{alias}")
    return out


def dup_bench(settings: Any, *, n_images: int = 1000, seed: int = 0, store: Any = None,
              dimension: int = 0, model: str = "", sizes: Sequence[int] = (), n_queries: int = 200,
              log: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """The JSON ``factsieve image-dup-bench`` prints."""
    import numpy as np

    t0 = time.perf_counter()
    originals, dropped = hash_originals(settings, n_images=n_images, seed=seed, log=log)
    hash_s = time.perf_counter() - t0
    stored = hex_matrix([o["hash"] for o in originals])
    plain = false_matches(stored, [stored[i:i + 1] for i in range(len(stored))], settings.pdq_max_distance)
    served = false_matches(stored, [hex_matrix(o["query_hashes"]) for o in originals], settings.pdq_max_distance)
    log(f"false matches: {plain['within_threshold']} of {plain['pairs']} pairs")
    recall, probes = edit_recall(originals, settings, log=log)
    qualities = [o["quality"] for o in originals]
    out: dict[str, Any] = {
        "images": n_images, "seed": seed, "kept": len(originals), "dropped_low_quality": dropped,
        "min_quality": settings.pdq_min_quality, "max_distance": settings.pdq_max_distance,
        "quality": {"p5": percentile(qualities, 0.05), "p50": percentile(qualities, 0.5)},
        "hash_ms_per_image": round(hash_s * 1e3 / max(1, n_images), 1),
        "edits": recall,
        "false_matches": {"own_hash": plain, "query_hashes_vs_stored": served},
        "mean_query_hashes": round(float(np.mean([len(o["query_hashes"]) for o in originals])), 2)
        if originals else None}
    if store is not None and sizes:
        out["latency"] = query_latency(store, settings, dimension, model, originals, probes, sizes=sizes,
                                       n_queries=n_queries, seed=seed, log=log)
    return out
