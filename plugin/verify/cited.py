"""Cited answers without an LLM (the ``cited`` strategy): passages chosen for diversity, the
verdict model's verdict over them, each passage's stance from the same model, and a
justification that quotes the strongest supporting and refuting passages by number.

Selection (:func:`select`): the claim's top ``candidates`` passages (dated before the claim,
never an excluded page: the retriever's filters), at most ``per_url`` of one page
(:func:`cap_per_url`), then Maximal Marginal Relevance (:func:`mmr_select`) over the passages'
stored embeddings when ``mmr_lambda`` is set, else the first ``passages`` of them.

Stance (:func:`stance`): the verdict model's label probabilities for the claim and ONE passage;
a passage supports or refutes the claim when Supported or Refuted leads the other by
:data:`STANCE_MARGIN`, and takes no side otherwise.

The evidence is passages, not question–answer pairs: ``qa_pairs`` holds each passage as an
answer to the claim taken as the question, marked ``"answer_kind": "passage"``, and the result
says ``"evidence_form": "passages"``. The pure functions are table-tested; :func:`verify_cited`
composes them with the parts handed in (the evidence search and the verdict model).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from plugin.evidence.urls import url_key
from plugin.models import MAX_TEXT_CHARS, Verdict
from plugin.verify.citing import citations
from plugin.verify.result import Outcome, Statement
from plugin.verify.scoring import LABELS

SUPPORTED, REFUTED = Verdict.SUPPORTED.value, Verdict.REFUTED.value
SUPPORTS, REFUTES, NEITHER = "supports", "refutes", "neither"

#: How far P(Supported) must lead P(Refuted) (or the reverse) for one passage to take that side:
#: a tenth of the probability mass, a round value fixed before any measurement and not tuned
#: (tuning it on the evaluation claims would fit the justification to them). Under it, the
#: passage is ``neither``: the model cannot tell its side apart from noise.
STANCE_MARGIN = 0.1
#: At most this many passages quoted for each side.
MAX_PER_SIDE = 2
#: A quoted sentence is cut to this many characters (at a word boundary, with an ellipsis).
MAX_QUOTE_CHARS = 200
#: A sentence of fewer words ("No.", "Yes.") is quoted with the sentence after it: alone it
#: says nothing a reader can check.
MIN_QUOTE_WORDS = 4

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
#: Words too common to say which sentence is about the claim.
_COMMON = frozenset(
    "the and for that this with from are was were has have had not but you his her its they "
    "their them our who what when where which why how all any can will would could should "
    "been being into over than then there these those also more most some such only very "
    "about after before just said says".split())


# ------------------------------------------------------------------------------- selection

def cap_per_url(urls: Sequence[str | None], per_url: int) -> list[int]:
    """Indices of ``urls`` (best first) keeping at most ``per_url`` of one page, by URL key
    (``plugin.evidence.urls.url_key``, the retriever's page identity); a passage without a URL
    is its own page."""
    seen: dict[str, int] = {}
    kept = []
    for i, url in enumerate(urls):
        page = url_key(url) if url else f"#{i}"
        if seen.get(page, 0) < per_url:
            seen[page] = seen.get(page, 0) + 1
            kept.append(i)
    return kept


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def mmr_select(query_vec: Sequence[float], passage_vecs: Sequence[Sequence[float]], k: int,
               lam: float) -> list[int]:
    """Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998): ``k`` passage indices in
    the order chosen, each maximising ``lam · cos(q, p) − (1 − lam) · max cos(p, chosen)``.
    Vectors are L2-normalised here, so similarities are cosines. Ties go to the earlier
    passage (the retriever's order); ``lam = 1`` is plain relevance order."""
    n = len(passage_vecs)
    if n == 0 or k <= 0:
        return []
    p = _unit(np.asarray(passage_vecs, dtype=np.float64))
    relevance = p @ _unit(np.asarray(query_vec, dtype=np.float64))
    similar = p @ p.T
    chosen: list[int] = []
    redundancy = np.full(n, -np.inf)
    while len(chosen) < min(k, n):
        left = [i for i in range(n) if i not in chosen]
        score = {i: lam * relevance[i] - (1 - lam) * (redundancy[i] if chosen else 0.0) for i in left}
        best = max(left, key=lambda i: (score[i], -i))
        chosen.append(best)
        redundancy = np.maximum(redundancy, similar[best])
    return chosen


def select(query_vec: Sequence[float] | None, passages: Sequence[Mapping[str, Any]], k: int,
           per_url: int, lam: float | None) -> list[int]:
    """The passages kept, as indices into ``passages`` (retrieval order, best first): the
    per-URL cap first, then MMR over their ``embedding`` when ``lam`` is set (and the query and
    every capped passage have a vector), else the first ``k`` under the cap."""
    capped = cap_per_url([p.get("url") for p in passages], per_url)
    vecs = [passages[i].get("embedding") for i in capped]
    if lam is None or query_vec is None or any(v is None for v in vecs):
        return capped[:k]
    return [capped[i] for i in mmr_select(query_vec, vecs, k, lam)]


# ------------------------------------------------------------------------------- stance

def stance(scores: Mapping[str, float]) -> tuple[str, float]:
    """A passage's side from the verdict model's label probabilities for (claim, that passage):
    ``supports`` when P(Supported) leads P(Refuted) by :data:`STANCE_MARGIN` or more,
    ``refutes`` the other way round, else ``neither``. The strength is the leader's probability
    minus the other's (0 for ``neither``)."""
    # rounded first: 0.3 − 0.2 is 0.0999… in binary floating point, and leads by the margin
    lead = round(float(scores.get(SUPPORTED, 0.0)) - float(scores.get(REFUTED, 0.0)), 6)
    if lead >= STANCE_MARGIN:
        return SUPPORTS, round(lead, 4)
    if -lead >= STANCE_MARGIN:
        return REFUTES, round(-lead, 4)
    return NEITHER, 0.0


# ------------------------------------------------------------------------------- the result

def content_words(text: str) -> set[str]:
    """Lower-cased words of three letters or more that are not common ones, and any word with a
    digit ("5g", "19")."""
    return {w for w in _WORD.findall(text.lower())
            if (len(w) > 2 and w not in _COMMON) or any(c.isdigit() for c in w)}


def sentences(text: str) -> list[str]:
    """The text's sentences, whitespace collapsed, a sentence under :data:`MIN_QUOTE_WORDS`
    words joined to the next one."""
    out: list[str] = []
    carry = ""
    for s in _SENTENCE_END.split(" ".join(str(text or "").split())):
        s = f"{carry} {s}".strip()
        if len(s.split()) < MIN_QUOTE_WORDS:
            carry = s
        else:
            out.append(s)
            carry = ""
    return out + [carry] if carry else out


def best_sentence(claim: str, text: str, max_chars: int = MAX_QUOTE_CHARS) -> str:
    """The passage's sentence (:func:`sentences`) sharing the most content words with the claim
    (the first of equals), cut at a word boundary to ``max_chars`` with an ellipsis."""
    sentences_ = sentences(text) or [""]
    words = content_words(claim)
    best = max(enumerate(sentences_), key=lambda e: (len(words & content_words(e[1])), -e[0]))[1]
    if len(best) <= max_chars:
        return best
    cut = best[:max_chars - 1].rsplit(" ", 1)[0] if " " in best[:max_chars - 1] else best[:max_chars - 1]
    return cut.rstrip(" ,;:") + "\u2026"


def source_name(p: Mapping[str, Any]) -> str:
    """Who a passage is from: its domain (the page's host), else its URL, else "a source"."""
    return str(p.get("domain") or p.get("url") or "a source")


def passage_pair(claim: str, p: Mapping[str, Any], side: str, strength: float) -> dict[str, Any]:
    """One passage as evidence: an answer (the passage) to the claim taken as the question."""
    return {"question": claim, "answer": str(p.get("text") or ""), "answer_kind": "passage",
            "source_url": p.get("url"), "passage_id": p.get("id"), "stance": side,
            "stance_strength": strength}


def side_statement(n: int, p: Mapping[str, Any], side: str, claim: str) -> Statement:
    """``<source> (<date>) <side> the claim: “<its most relevant sentence>”``, citing passage ``n``."""
    when = f" ({p['published_at']})" if p.get("published_at") else ""
    quote = best_sentence(claim, p.get("text") or "")
    return Statement(text=f"{source_name(p)}{when} {side} the claim: \u201c{quote}\u201d", sources=(n,))


def statements_for(claim: str, passages: Sequence[Mapping[str, Any]],
                   stances: Sequence[tuple[str, float]]) -> list[Statement]:
    """The strongest supporting and the strongest refuting passages (at most
    :data:`MAX_PER_SIDE` each; the side with the stronger leader first), one statement each
    citing its passage number (1-based); one statement citing every passage when none takes a
    side; none without passages."""
    if not passages:
        return []
    sides = {side: sorted((i for i, (s, _) in enumerate(stances) if s == side),
                          key=lambda i: (-stances[i][1], i))[:MAX_PER_SIDE] for side in (SUPPORTS, REFUTES)}
    order = sorted((side for side in sides if sides[side]), key=lambda side: -stances[sides[side][0]][1])
    out = [side_statement(i + 1, passages[i], side, claim) for side in order for i in sides[side]]
    if out:
        return out
    n = len(passages)
    return [Statement(text=f"None of the {n} passage{'s' if n > 1 else ''} found supports or refutes the "
                           "claim: for each, the verdict model's Supported and Refuted probabilities are "
                           f"within {STANCE_MARGIN} of each other.", sources=tuple(range(1, n + 1)))]


def cited_result(claim: str, passages: Sequence[Mapping[str, Any]], stances: Sequence[tuple[str, float]],
                 verdict_scores: Mapping[str, float] | None) -> Outcome:
    """The strategy's part of a verification result (the shape of the LLM strategies': verdict,
    label scores, cited statements, justification, evidence, citations), from the passages
    kept, their stances and the verdict model's scores over all of them. Without passages the
    verdict is Not Enough Evidence from nothing (``verdict_source`` ``none``), never the
    model's reading of the claim alone."""

    pairs = tuple(passage_pair(claim, p, s, w) for p, (s, w) in zip(passages, stances))
    statements = tuple(statements_for(claim, passages, stances))
    if not passages or not verdict_scores:
        scores: dict[str, float] = {}
        verdict, source = Verdict.NOT_ENOUGH_EVIDENCE.value, "none"
        note: str | None = "no evidence passage dated before the claim was found"
    else:
        scores = {k: float(verdict_scores.get(k, 0.0)) for k in LABELS}
        verdict, source, note = max(LABELS, key=lambda k: scores[k]), "head", None
    return Outcome(verdict=verdict, label_scores=scores, statements=statements, qa_pairs=pairs,
                   citations=citations(pairs, statements), stage="cited", stopped_because="passages",
                   verdict_source=source, evidence_form="passages", note=note)


# ------------------------------------------------------------------------------- composition

def verify_cited(req: Any, cfg: Any, *, evidence: Any, head: Any,
                 timed: Callable[[str, Callable[[], Any]], Any]) -> Outcome:
    """Retrieve ``cfg.candidates`` passages for the claim (before its date, never an excluded
    page, with their stored vectors), keep ``cfg.passages`` (:func:`select`), and score them
    with the verdict model in ONE ``batch_scores`` call: all kept passages together (the
    verdict), then each alone (its stance)."""
    from plugin.errors import BadInput, ModelUnavailable
    from plugin.evidence.retrieve import EvidenceQuery

    if evidence is None:
        raise BadInput("the cited configuration needs an evidence index to read passages from")
    if head is None:
        raise ModelUnavailable("no verdict model is available: run `factsieve train-verdict`")
    found = timed("retrieve", lambda: evidence.search(EvidenceQuery(
        text=req.claim[:MAX_TEXT_CHARS], before=req.date, exclude_urls=req.exclude_urls,
        exclude_domains=req.exclude_domains, k=max(cfg.candidates, cfg.passages), vectors=True)))
    kept = [found.passages[i] for i in timed("select", lambda: select(
        found.query_vector, found.passages, cfg.passages, cfg.per_url, cfg.mmr_lambda))]
    passages = [{k: v for k, v in p.items() if k != "embedding"} for p in kept]
    pairs = [{"question": req.claim, "answer": str(p.get("text") or ""), "source_url": p.get("url"),
              "passage_id": p.get("id")} for p in passages]
    day = req.date.isoformat() if req.date else None
    items = ([(req.claim, pairs)] + [(req.claim, [pair]) for pair in pairs]) if pairs else []
    scores = timed("head", lambda: head.batch_scores(items, [day] * len(items))) if items else []
    return cited_result(req.claim, passages, [stance(s) for s in scores[1:]],
                        scores[0] if scores else None)
