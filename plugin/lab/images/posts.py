"""Image posts measured against text posts: a dataset's queries rendered as images
(``render.TEMPLATES``), read by the image stage as a post's image is (``plugin.image.stage.analyse``),
and their OCR text matched as the post with the evaluation's own machinery
(``plugin.lab.evaluate.run.run_config``, the same index, configuration and qrels as ``evaluate``)
beside the text-only run on the same queries.

With ``caption="half"`` a post is an image with a caption, as most image posts are: the caption
(the post's text) carries the first half of its words and the image shows the rest
(``split_caption``); it is matched by caption and image together (``MatchRequest.image``, the OCR
text a query set of its own weighted by the configuration's ``ocr_weight``), once per weight
asked, beside the caption alone, so what the image adds shows.

Renderings and readings are cached under a work folder (one JSON file per template, language
setting and caption mode, keyed by the query's text and ``render.RENDER_VERSION``), so a re-run
only matches; ``fresh`` reads every image again (after the OCR recipe changed).
"""
from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.lab.evaluate.metrics import percentile

SHOWN = ("MAP@5", "S@1", "S@10")
#: where a post's words go: ``none`` all in the image (no caption), ``half`` the first half in
#: the caption and the rest in the image
CAPTIONS = ("none", "half")
_WORD = re.compile(r"\S+")


def split_caption(text: str) -> tuple[str, str]:
    """A post's text cut before the middle word of its own words (an embedded tweet's signature
    not counted: it stays with the image, drawn as the card's author and date): the caption
    (the first half of its words, rounded down) and the text its image shows (the rest), each
    as written (line breaks kept) and stripped. A post of one word has no caption."""
    from plugin.lab.images.render import body_end

    starts = [m.start() for m in _WORD.finditer(text[:body_end(text)])]
    if len(starts) < 2:
        return "", text.strip()
    cut = starts[len(starts) // 2]
    return text[:cut].strip(), text[cut:].strip()


def shown_text(text: str, caption: str) -> str:
    """The text a post's image shows under the caption mode ``caption``."""
    return split_caption(text)[1] if caption == "half" else text


def reading_key(text: str, template: str) -> str:
    from plugin.lab.images.render import RENDER_VERSION

    return hashlib.sha1(f"{RENDER_VERSION}\x1f{template}\x1f{text}".encode()).hexdigest()[:16]


def read_images(queries: list[dict[str, Any]], template: str, settings: Any, *, work_dir: Path,
                unknown_lang: bool, caption: str = "none", fresh: bool = False, reader: Any = None,
                log: Callable[[str], None] = lambda m: None) -> dict[str, dict[str, Any]]:
    """Each query (all of its text, or with ``caption="half"`` the part its image shows)
    rendered in ``template`` and read by the image stage (the query's language given, or none
    with ``unknown_lang``): ``{query id: reading}``, a reading being ``text``, ``lang``,
    ``model``, ``confidence``, ``pass``, ``analyse_ms``, ``ocr_ms``, ``cer``, the ``reference``
    it was scored against and the ``image`` as analysed (``analysis_of`` rebuilds it) — or
    ``skipped`` with the reason."""
    from plugin.image.stage import analyse
    from plugin.lab.images.cer import cer
    from plugin.lab.images.render import render

    suffix = "" if caption == "none" else f"-caption-{caption}"
    folder = work_dir / f"{template}{suffix}"
    folder.mkdir(parents=True, exist_ok=True)
    cache_file = work_dir / f"readings-{template}-{'unknown' if unknown_lang else 'known'}{suffix}.json"
    cache: dict[str, dict[str, Any]] = {}
    if cache_file.is_file() and not fresh:
        cache = json.loads(cache_file.read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    done = 0
    for q in queries:
        shown = shown_text(q["text"], caption)
        qid, key = str(q["id"]), reading_key(shown, template)
        if cache.get(qid, {}).get("key") == key and (caption == "none" or "image" in cache[qid]
                                                     or "skipped" in cache[qid]):
            out[qid] = cache[qid]
            continue
        try:
            shot = render(shown, template, seed=qid)
        except BadInput as exc:
            out[qid] = cache[qid] = {"key": key, "skipped": str(exc)}
            continue
        (folder / f"{qid}.{'png' if shot.format == 'PNG' else 'jpg'}").write_bytes(shot.data)
        t0 = time.perf_counter()
        analysis = analyse(shot.data, settings, lang=None if unknown_lang else q.get("lang"),
                           query=True, ocr=True, reader=reader)  # as a post is analysed
        wall = (time.perf_counter() - t0) * 1e3
        ocr = analysis.ocr
        text = ocr.text if ocr else ""
        out[qid] = cache[qid] = {
            "key": key, "text": text, "lang": ocr.lang if ocr else None, "model": ocr.model if ocr else None,
            "confidence": round(ocr.confidence, 1) if ocr else None, "pass": ocr.pass_name if ocr else None,
            "analyse_ms": round(wall, 1), "ocr_ms": round(ocr.seconds * 1e3, 1) if ocr else None,
            "cer": round(cer(text, shot.text), 4), "reference": shot.text, "image": image_fields(analysis)}
        done += 1
        if done % 20 == 0:
            log(f"{template}: {done} images read")
            cache_file.write_text(json.dumps(cache, ensure_ascii=False), encoding="utf-8")
    cache_file.write_text(json.dumps(cache, ensure_ascii=False), encoding="utf-8")
    return out


def image_fields(analysis: Any) -> dict[str, Any]:
    """What a cached reading keeps of an ``ImageAnalysis`` besides its OCR text (``analysis_of``
    rebuilds it)."""
    return {"sha256": analysis.sha256, "width": analysis.width, "height": analysis.height,
            "format": analysis.format, "pdq": None if analysis.pdq is None else analysis.pdq.hex,
            "pdq_quality": None if analysis.pdq is None else analysis.pdq.quality,
            "query_hashes": list(analysis.query_hashes), "text_heavy": analysis.text_heavy,
            "text_share": None if analysis.ocr is None else analysis.ocr.text_share}


def analysis_of(reading: dict[str, Any]) -> Any:
    """The ``ImageAnalysis`` a cached reading stands for (``None`` for a skipped one), as the
    matcher takes a post's image."""
    from plugin.image.model import ImageAnalysis, OcrResult, PdqHash

    if "skipped" in reading:
        return None
    im = reading["image"]
    ocr = None if reading.get("model") is None else OcrResult(
        text=reading["text"], model=reading["model"], lang=reading["lang"],
        confidence=reading["confidence"] or 0.0, pass_name=reading["pass"] or "",
        text_share=im["text_share"] or 0.0, seconds=(reading["ocr_ms"] or 0.0) / 1e3)
    return ImageAnalysis(sha256=im["sha256"], width=im["width"], height=im["height"], format=im["format"],
                         pdq=None if im["pdq"] is None else PdqHash(im["pdq"], im["pdq_quality"]),
                         query_hashes=tuple(im["query_hashes"]), ocr=ocr, text_heavy=im["text_heavy"])


def summarise_readings(readings: dict[str, dict[str, Any]],
                       langs: dict[str, str | None] | None = None) -> dict[str, Any]:
    """CER (mean, median, 90th percentile), the image stage's time per image (decode, hash, OCR;
    matching is each mode's ``match_ms``), empty readings and kept passes; with ``langs`` (query
    id → the post's language), the mean CER per language too."""
    read = [r for r in readings.values() if "skipped" not in r]
    cers = [r["cer"] for r in read]
    analyse_ms = [r["analyse_ms"] for r in read]
    by_lang: dict[str, list[float]] = {}
    for qid, r in readings.items():
        if "skipped" not in r and langs is not None:
            by_lang.setdefault(str(langs.get(qid)), []).append(r["cer"])
    return {"images": len(read), "skipped": len(readings) - len(read),
            "empty": sum(1 for r in read if not r["text"].strip()),
            "cer": None if not cers else {"mean": round(statistics.fmean(cers), 4),
                                          "p50": round(percentile(cers, 0.5), 4),
                                          "p90": round(percentile(cers, 0.9), 4)},
            "analyse_ms": {"p50": percentile(analyse_ms, 0.5), "p95": percentile(analyse_ms, 0.95)},
            "pass": dict(Counter(r["pass"] for r in read)),
            "langs_read": dict(Counter(str(r["lang"]) for r in read)),
            "cer_per_lang": {lang: round(statistics.fmean(c), 4) for lang, c in sorted(by_lang.items())}}


def image_queries(queries: Iterable[dict[str, Any]], readings: dict[str, dict[str, Any]], *,
                  unknown_lang: bool) -> list[dict[str, Any]]:
    """The image posts as queries: the OCR text as the post's text, the language given only when
    known. Posts read as nothing are left out (the run scores them 0)."""
    out = []
    for q in queries:
        r = readings.get(str(q["id"]), {})
        if r.get("text", "").strip():
            out.append({"id": q["id"], "text": r["text"], "date": q.get("date"),
                        "lang": None if unknown_lang else q.get("lang")})
    return out


def captioned_posts(queries: Iterable[dict[str, Any]], readings: dict[str, dict[str, Any]], *,
                    unknown_lang: bool, with_image: bool) -> list[dict[str, Any]]:
    """The posts of ``caption="half"`` as queries: the caption as the post's text, with the
    image as analysed (``image``) when ``with_image`` (a post whose image could not be rendered
    is matched by its caption alone), the language given only when known. Posts with nothing to
    match (no caption and no text read) are left out (the run scores them 0)."""
    out = []
    for q in queries:
        caption = split_caption(q["text"])[0]
        image = analysis_of(readings[str(q["id"])]) if with_image and str(q["id"]) in readings else None
        read = image.ocr.text if image is not None and image.ocr is not None else ""
        if caption or read.strip():
            out.append({"id": q["id"], "text": caption, "date": q.get("date"),
                        "lang": None if unknown_lang else q.get("lang"), "image": image})
    return out


def _shown(metrics: dict[str, Any], text_map5: float | None = None) -> dict[str, Any]:
    out = {k: metrics[k] for k in SHOWN}
    out["matched"] = metrics["n_queries"]  # posts with text to match (the others score 0)
    out["match_ms"] = {k: metrics["latency_ms"][k] for k in ("p50", "p95")}
    if text_map5 is not None:
        out["ratio_MAP@5"] = round(metrics["MAP@5"] / text_map5, 4) if text_map5 else None
    out["per_lang"] = {lang: {k: v for k, v in m.items() if k in ("n", "S@10", "MAP@5")}
                       for lang, m in metrics.get("per_lang", {}).items()}
    return out


def image_posts(store: Any, embedder: Any, settings: Any, dataset: Any, config: Any, *,
                templates: Iterable[str], splits: Iterable[str] | None = None, mode: str | None = None,
                unknown_lang: bool = False, limit: int | None = None, work_dir: Path,
                caption: str = "none", ocr_weights: Iterable[float] | None = None,
                fresh: bool = False, reranker: Any = None, generate: Any = None,
                log: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """The JSON ``factsieve image-posts`` prints: per template the readings' CER and cost, and
    MAP@5, S@1, S@10 of the image posts beside the text-only run (``text``) on the same
    queries, with the ratio of MAP@5s. ``caption="none"``: image-only posts, matched by their OCR
    text (``modes``). ``caption="half"``: caption + image posts, matched once per OCR weight in
    ``ocr_weights`` (default: the configuration's own; ``weights``), beside the caption alone
    (``caption_only``)."""
    from plugin.image.ocr import reader as ocr_reader
    from plugin.learn.train.datasets import ensure_dataset_index
    from plugin.lab.evaluate.run import run_config, scored_modes, training_queries
    from plugin.search.matcher import Matcher

    if caption not in CAPTIONS:
        raise BadInput(f"unknown caption mode {caption!r}; known: {', '.join(CAPTIONS)}")
    weights = list(ocr_weights) if ocr_weights is not None else [config.ocr_weight]
    if caption == "none" and ocr_weights is not None:
        raise BadInput("--ocr-weights needs --caption half: an image-only post is matched by the text read "
                       "from its image alone, which no weight changes")
    if any(w < 0 for w in weights):
        raise BadInput("an OCR weight is 0 or more")
    alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
    excluded = training_queries({config.name: config}, settings, dataset) if (
        reranker is not None or config.query_encoder) else set()
    wanted = set(splits) if splits else None
    chosen = [q for q in dataset.queries if str(q["id"]) in dataset.qrels["all"]
              and str(q["id"]) not in excluded and (wanted is None or q.get("split") in wanted)]
    if limit:
        chosen = chosen[:limit]
    if not chosen:
        raise BadInput("no queries left to score: check --split and --limit")
    ids = {str(q["id"]) for q in chosen}
    modes = scored_modes(dataset, mode, lambda qrels: {q: r for q, r in qrels.items() if q in ids})
    matcher = Matcher(store, embedder, settings, alias=alias, config=config, reranker=reranker,
                      generate=generate)
    if config.rerank is not None and reranker is None:
        raise BadInput(f"configuration {config.name!r} reranks with {config.rerank.model!r}, which is not "
                       "available: build it (`factsieve model build`) or name another --config")
    splits_seen = sorted({str(q.get("split")) for q in chosen})
    out: dict[str, Any] = {"dataset": str(dataset.path), "config": config.name, "index": alias,
                           "n_queries": len(chosen), "split": "+".join(splits_seen),
                           "lang": "unknown" if unknown_lang else "known", "caption": caption,
                           "modes": [m for m, _, _ in modes], "work_dir": str(work_dir), "text": {},
                           "templates": {}}
    text_map5: dict[str, float] = {}
    for mname, m, qrels in modes:
        metrics = run_config(matcher, config, chosen, qrels, mode=m)
        text_map5[mname] = metrics["MAP@5"]
        out["text"][mname] = _shown(metrics)
    if caption == "half":
        captions = captioned_posts(chosen, {}, unknown_lang=unknown_lang, with_image=False)
        out["caption_only"] = {mname: _shown(run_config(matcher, config, captions, qrels, mode=m), text_map5[mname])
                               for mname, m, qrels in modes}
    reader = ocr_reader(settings)
    for template in templates:
        readings = read_images(chosen, template, settings, work_dir=work_dir / dataset.name,
                               unknown_lang=unknown_lang, caption=caption, fresh=fresh, reader=reader, log=log)
        entry = summarise_readings(readings, {str(q["id"]): q.get("lang") for q in chosen})
        if caption == "none":
            posts = image_queries(chosen, readings, unknown_lang=unknown_lang)
            entry["modes"] = {mname: _shown(run_config(matcher, config, posts, qrels, mode=m), text_map5[mname])
                              for mname, m, qrels in modes}
            log(f"{template}: {json.dumps({k: v['MAP@5'] for k, v in entry['modes'].items()})}")
        else:  # the readings once, the matching once per weight
            posts = captioned_posts(chosen, readings, unknown_lang=unknown_lang, with_image=True)
            entry["weights"] = {}
            for w in weights:
                weighted = config.model_copy(update={"ocr_weight": w})
                entry["weights"][f"{w:g}"] = {
                    mname: _shown(run_config(matcher, weighted, posts, qrels, mode=m), text_map5[mname])
                    for mname, m, qrels in modes}
                log(f"{template} ocr_weight {w:g}: "
                    f"{json.dumps({k: v['MAP@5'] for k, v in entry['weights'][f'{w:g}'].items()})}")
        out["templates"][template] = entry
    return out
