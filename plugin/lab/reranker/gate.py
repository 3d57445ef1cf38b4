"""``factsieve train-reranker gate``: measure where a reranker beats the first stage, per post
language and head kind, on posts it did not train on, and write the table into its manifest.

The served gate (``plugin.search.rerank_gate.measured_gate``) reads the table: a match is
reranked when its row says the reranker beat the first stage's order there, and keeps the fused
order (saying why) where it did not or where nothing was measured. Rows are keyed by the post's
language and by the kind of its head (``head_kind``: ``own`` when the fused head's first candidate
is in the post's language, ``cross`` when it is in another), because a reranker trained on answers
in the post's language may misorder a head whose best answer crosses languages.

**Which posts.** Of each dataset, only queries the reranker never trained on and that are not a
reported split: its ``train`` split minus the manifest's training ids (the fold ``--fold I/K``
held out), plus ``spare`` queries (weak pairs kept out of training, ``weak_pairs``), at most
``per_lang`` a language. ``dev`` and ``test`` stay for the one report, so the gate is chosen out
of fold and measured once.

**Crosslingual heads.** A ``cross`` head is measured only on posts whose answer is in another language (a dataset's
crosslingual pairs): on the others the first stage's crosslingual first candidate is wrong by
construction, and reranking would look better than it is where the crosslingual answer is right.
No tuning data here has crosslingual pairs at scale, so the table has no ``cross`` rows. A
``CROSS_RULE`` may serve those heads (``measure_cross_rule``): candidates in the post's language
move above the others only from a reranker probability at which such candidates are right at
least 95 % of the time, measured on the same posts, so a right crosslingual answer is demoted
only by a rare sure mistake. Where no probability qualifies (so far) no rule is written, and
those heads keep the fused order, with a note.

**The rule.** A row reranks when the reranked MAP@5 beats the first stage's on its posts. A row
needs ``MIN_POSTS`` posts; thinner languages are pooled into the ``*`` row, which serves every
language without a row of its own.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import replace
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from plugin.lab.evaluate.metrics import average_precision_at_k
from plugin.search.rerank_gate import CROSS_RULE

#: posts a (language, head kind) row needs to stand alone
MIN_POSTS = 20
#: the splits a gate may be measured on (never dev or test: those are reported)
GATE_SPLITS = ("train", "spare")


def gate_queries(queries: Sequence[dict[str, Any]], trained: set[str], qrels: dict[str, set[str]],
                 per_lang: int) -> list[dict[str, Any]]:
    """The dataset's queries the gate may be measured on, at most ``per_lang`` a language, in
    the dataset's order (pure)."""
    taken: dict[str | None, int] = defaultdict(int)
    out = []
    for q in queries:
        qid = str(q["id"])
        if q.get("split") not in GATE_SPLITS or qid in trained or qid not in qrels:
            continue
        if taken[q.get("lang")] >= per_lang:
            continue
        taken[q.get("lang")] += 1
        out.append(q)
    return out


def gate_table(samples: Sequence[tuple[str, str, float, float]], min_posts: int = MIN_POSTS) -> dict[str, Any]:
    """The table from ``(post language, head kind, first-stage AP@5, reranked AP@5)`` per post
    (pure): a row per language and kind with ``min_posts`` posts, the rest pooled into ``*``."""
    from plugin.search.rerank_gate import OTHER_LANGUAGES

    cells: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for lang, kind, first, reranked in samples:
        cells[(lang, kind)].append((first, reranked))
    rows: dict[str, dict[str, Any]] = defaultdict(dict)
    pooled: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (lang, kind), got in sorted(cells.items()):
        if len(got) >= min_posts:
            rows[lang][kind] = _row(got)
        else:
            pooled[kind].extend(got)
    for kind, got in sorted(pooled.items()):
        if len(got) >= min_posts:
            rows[OTHER_LANGUAGES][kind] = {**_row(got), "languages": sorted(
                {lang for (lang, k), g in cells.items() if k == kind and len(g) < min_posts})}
    return {"rows": dict(rows), "min_posts": min_posts,
            "rule": "rerank where the reranked MAP@5 beats the first stage's on held-out posts"}


def _row(got: list[tuple[float, float]]) -> dict[str, Any]:
    first = round(statistics.fmean(f for f, _ in got), 4)
    reranked = round(statistics.fmean(r for _, r in got), 4)
    return {"n": len(got), "first_stage": first, "reranked": reranked, "rerank": reranked > first}


def measure_gate(settings: Any, name: str, adapters: Path, datasets: Sequence[Any], *,
                 config: str = "hybrid-rerank", per_lang: int = 60, write: bool = False) -> dict[str, Any]:
    """Build reranker adapter ``name`` from ``adapters``, rerank every gate query of each of
    ``datasets`` (``Dataset``s, extra corpora included) in auto mode with its gate open, and
    return the table (written into the adapter's manifest with ``write``; a ``CROSS_RULE``
    measured before is kept)."""
    samples: list[tuple[str, str, float, float]] = []
    per_dataset: dict[str, dict[str, int]] = {}
    for dataset, q, first, reranked in gate_matches(settings, name, adapters, datasets, config=config,
                                                     per_lang=per_lang):
        seen = per_dataset.setdefault(dataset.name, {"posts": 0, "cross_heads_left_out": 0})
        relevant = dataset.qrels["all"][str(q["id"])]
        lang = q.get("lang") or first.lang or "?"
        kind = head_kind_of(lang, first.matches)
        if kind == "cross" and not dataset.qrels["cross"].get(str(q["id"])):
            # the first stage put another language first, and the answer is in the post's:
            # such posts say nothing of a head whose crosslingual answer is right, which
            # no tuning data here has at scale (``cross_rule`` serves those heads)
            seen["cross_heads_left_out"] += 1
            continue
        seen["posts"] += 1
        samples.append((lang, kind, average_precision_at_k([m["id"] for m in first.matches], relevant, 5),
                        average_precision_at_k([m["id"] for m in reranked.matches], relevant, 5)))
    table = {**gate_table(samples), "measured_on": per_dataset, "config": config}
    if write:
        _write(adapters, name, lambda gate: {**table, **({CROSS_RULE: gate[CROSS_RULE]} if CROSS_RULE in gate else {})})
    return table


def gate_matches(settings: Any, name: str, adapters: Path, datasets: Sequence[Any], *, config: str,
                 per_lang: int) -> Iterator[tuple[Any, dict[str, Any], Any, Any]]:
    """``(dataset, query, first-stage match, reranked match)`` for every gate query of each of
    ``datasets`` (``gate_queries``), matched in auto mode by reranker adapter ``name`` built from
    ``adapters`` with its gate open (every head reranked, a sure one's too, each match with its
    reranker score)."""
    import tempfile

    from plugin.build.adapted import build_lora_reranker
    from plugin.embedding import load_embedder
    from plugin.embedding.adapter import load_adapter
    from plugin.index.store import Store
    from plugin.lab.evaluate.run import trained_queries_of
    from plugin.learn.train.datasets import ensure_dataset_index
    from plugin.models import Mode
    from plugin.search.matcher import Matcher, MatchRequest
    from plugin.search.rerank import OnnxCrossEncoder
    from plugin.search.retrieval import retrieval_config

    adapter = load_adapter(name, adapters)
    cfg = retrieval_config(config)
    if cfg.rerank is not None:  # what reranking does to every head, a sure one's too (``skip`` measures that)
        cfg = cfg.model_copy(update={"rerank": cfg.rerank.model_copy(update={"skip_at": None})})
    store, embedder = Store(settings), load_embedder(settings)
    with tempfile.TemporaryDirectory(prefix="factsieve-gate-") as tmp:
        built = build_lora_reranker(settings, name, folder=adapters, dest=Path(tmp) / name)
        reranker = OnnxCrossEncoder(built, name=name, max_seq_length=int(adapter.manifest.get("max_length", 128)))
        for dataset in datasets:
            alias, _ = ensure_dataset_index(store, embedder, dataset, settings)
            matcher = Matcher(store, embedder, settings, alias=alias, config=cfg, reranker=reranker)
            for q in gate_queries(dataset.queries, trained_queries_of(adapter.manifest, dataset.path.name),
                                  dataset.qrels["all"], per_lang):
                req = MatchRequest(text=q["text"], lang=q.get("lang"), mode=Mode.AUTO, k=10)
                yield dataset, q, matcher.match(replace(req, rerank=False), cfg), matcher.match(req, cfg)


def _write(adapters: Path, name: str, gate: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """The adapter's manifest with its ``GATE_KEY`` replaced by ``gate(the one it had)``."""
    import json

    from plugin.search.rerank import GATE_KEY

    path = adapters / f"{name}.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest[GATE_KEY] = gate(manifest.get(GATE_KEY) or {})
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# -- cross heads ----------------------------------------------------------------------------------
#: the probabilities ``cross_rule`` walks
PROBABILITIES = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
#: how often a candidate in the post's language that the rule moves up must be right (its Wilson
#: lower bound, as the auto-confirm tier and the tipline's threshold ask)
MIN_PRECISION = 0.95


def cross_rule(candidates: Sequence[tuple[float, bool]], probabilities: Sequence[float] = PROBABILITIES,
               min_precision: float = MIN_PRECISION) -> dict[str, Any]:
    """``CROSS_RULE`` from the reranked heads' candidates in their post's language, ``(reranker
    probability, right)`` each (pure): the lowest probability from which they are right at least
    ``min_precision`` of the time by the one-sided 95 % Wilson lower bound, and the table. A
    ``cross`` head's own-language candidates at or above it move above a first candidate in
    another language (``rerank.promote_sure``); a right crosslingual answer is demoted only by
    one of them that is wrong, which is what the bound holds rare. ``min_probability`` ``None``:
    none qualifies, and cross heads keep the fused order."""
    from plugin.learn.tier import wilson_lower

    table = []
    for at in probabilities:
        got = [right for p, right in candidates if p >= at]
        hits = sum(got)
        table.append({"min_probability": at, "candidates": len(got), "right": hits,
                      "precision": round(hits / len(got), 4) if got else None,
                      "precision_low": round(wilson_lower(hits, len(got)), 4)})
    ok = [r for r in table if r["candidates"] and r["precision_low"] >= min_precision]
    return {"min_probability": ok[0]["min_probability"] if ok else None, "min_precision": min_precision,
            "rule": "candidates in the post's language move above a first candidate in another language from the "
                    "lowest reranker probability whose precision_low (one-sided 95 % Wilson) is at least min_precision",
            "table": table}


def measure_cross_rule(settings: Any, name: str, adapters: Path, datasets: Sequence[Any], *,
                       config: str = "hybrid-rerank", per_lang: int = 60, write: bool = False) -> dict[str, Any]:
    """The ``CROSS_RULE`` of reranker adapter ``name`` (``cross_rule``) from every candidate in
    its post's language of the reranked gate queries of ``datasets``, and what it does to their
    ``cross`` heads (MAP@5 of the fused order and of ``promote_sure``'s; the gate's table leaves
    them out); written into the adapter's manifest beside the table with ``write``."""
    from plugin.models import Fused, Hit
    from plugin.search.rerank import promote_sure
    from plugin.search.retrieval import retrieval_config

    stage = retrieval_config(config).rerank
    candidates: list[tuple[float, bool]] = []
    heads: list[tuple[list[Fused], list[float], str, set[str]]] = []
    for dataset, q, first, reranked in gate_matches(settings, name, adapters, datasets, config=config,
                                                     per_lang=per_lang):
        relevant = dataset.qrels["all"][str(q["id"])]
        lang = q.get("lang") or first.lang or "?"
        p = {m["id"]: m["explain"]["rerank"]["score"] for m in reranked.matches if "rerank" in m.get("explain", {})}
        candidates.extend((p[m["id"]], m["id"] in relevant) for m in reranked.matches
                          if m["id"] in p and m.get("lang") == lang)
        if head_kind_of(lang, first.matches) == "cross" and all(m["id"] in p for m in first.matches):
            fused = [Fused(id=m["id"], score=m["score"], rank=i,
                           contributions={"q": Hit(m["id"], m["score"], i, "q", {"lang": m.get("lang")})})
                     for i, m in enumerate(first.matches, start=1)]
            heads.append((fused, [p[f.id] for f in fused], lang, relevant))
    rule = cross_rule(candidates)
    at = rule["min_probability"]
    if at is not None and heads:
        before = [average_precision_at_k([f.id for f in h], rel, 5) for h, _, _, rel in heads]
        after = [average_precision_at_k([f.id for f in promote_sure(h, s, lang, at, stage)], rel, 5)
                 for h, s, lang, rel in heads]
        rule["cross_heads"] = {"n": len(heads), "first_stage": round(statistics.fmean(before), 4),
                               "promoted": round(statistics.fmean(after), 4)}
    rule["measured_on"] = sorted({d.name for d in datasets})
    if write:
        _write(adapters, name, lambda gate: {**gate, CROSS_RULE: rule})
    return rule


def head_kind_of(lang: str, matches: Sequence[dict[str, Any]]) -> str:
    """``rerank_gate.head_kind`` of the fused head as match dicts (their ``lang``; pure)."""
    from plugin.search.rerank_gate import kind_of_first

    return kind_of_first(lang, matches[0].get("lang") if matches else None)
