"""``factsieve train-reranker weak-pairs``: a retrieval dataset of weak pairs from a corpus of
fact-check articles in many languages (``../shared/data/vclaims_multilingual``).

A fact-check article states its claim twice, in the same language: the claim as the checkers
summarised it, and the article's title. The two are different wordings of one claim, as a post
and the fact-check that answers it are. Each usable article gives a query (its claim, as the
post) and a fact-check (its title alone, as the passage), and the pair is the only relevant one:
other articles about the same story are unlabelled, which is what makes the supervision weak.

An article is usable when both texts are there and neither contains the other (a title that
repeats the claim teaches nothing). Its query's split is ``dev`` when the first hex digit of
``sha1(id)`` is ``e`` or ``f`` (about an eighth, held back for the language gate's table and the
weak-pair scores), else ``train`` for the first ``per_lang`` of its language in sha1 order (a cap:
the big languages would otherwise drown the small ones, and every pair costs CPU time to train
on), else ``spare`` (indexed, never trained on). Pure apart from reading and writing the files.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from plugin.errors import BadInput
from plugin.learn.train.groups import sha1_digit

#: the sha1 digits of the weak pairs held back from training
DEV_DIGITS = "ef"
#: a query id is the article id with this prefix: never the same string as a fact-check id
QUERY_PREFIX = "wp-"


def usable(claim: str, title: str) -> bool:
    """Whether an article's claim and title are two wordings, not one (pure)."""
    c, t = claim.strip().casefold(), title.strip().casefold()
    return bool(c) and bool(t) and c not in t and t not in c


def primary_language(tag: str | None) -> str | None:
    """A language tag's ISO 639-1 part, as a post's language is given (``zh-tw`` → ``zh``)."""
    return tag.split("-")[0].strip().lower() or None if tag else None


def pairs_of(articles: list[dict[str, Any]], per_lang: int | None = None
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The dataset's queries, fact-checks and qrels from ``articles`` (pure)."""
    queries, factchecks, qrels = [], [], []
    taken: Counter[str | None] = Counter()
    for a in articles:
        claim, title = a.get("claim") or "", a.get("title") or ""
        if not usable(claim, title):
            continue
        fid = str(a["id"])
        qid = QUERY_PREFIX + fid
        lang = primary_language(a.get("lang"))
        queries.append({"id": qid, "text": claim.strip(), "lang": lang, "date": a.get("date")})
        factchecks.append({"id": fid, "claim": title.strip(), "title": "", "url": a.get("url"),
                           "lang": lang, "date": a.get("date"), "rating": a.get("rating")})
        qrels.append({"query_id": qid, "factcheck_id": fid})
    for q in sorted(queries, key=lambda q: hashlib.sha1(q["id"].encode("utf-8")).hexdigest()):
        if sha1_digit(q["id"]) in DEV_DIGITS:
            q["split"] = "dev"
        elif per_lang is None or taken[q["lang"]] < per_lang:
            q["split"] = "train"
            taken[q["lang"]] += 1
        else:
            q["split"] = "spare"
    return queries, factchecks, qrels


def write_weak_pairs(corpus: Path, out: Path, per_lang: int | None = None) -> dict[str, Any]:
    """Read ``corpus`` (a folder with ``factchecks.jsonl``), write the dataset to ``out`` and say
    what it holds, per language and split."""
    file = corpus / "factchecks.jsonl" if corpus.is_dir() else corpus
    if not file.is_file():
        raise BadInput(f"--corpus {str(corpus)!r} has no factchecks.jsonl")
    try:
        articles = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    except ValueError as exc:
        raise BadInput(f"{file}: not JSON Lines ({exc})") from exc
    queries, factchecks, qrels = pairs_of(articles, per_lang)
    if not queries:
        raise BadInput(f"{file}: no article has both a claim and a different title")
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("queries", queries), ("factchecks", factchecks), ("qrels", qrels)):
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (out / "README.md").write_text(
        f"Weak pairs (claim → title of the same article) built by `factsieve train-reranker weak-pairs` "
        f"from `{file}`; see `plugin/lab/reranker/weak_pairs.py`.\n", encoding="utf-8")
    counts = Counter((q["lang"], q["split"]) for q in queries)
    langs = sorted({lang for lang, _ in counts}, key=lambda lang: (-counts[(lang, "train")], lang or ""))
    return {"out": str(out), "articles": len(articles), "pairs": len(queries),
            "split": dict(Counter(q["split"] for q in queries)),
            "per_lang": {lang: {s: counts[(lang, s)] for s in ("train", "dev", "spare")}
                         for lang in langs}}
