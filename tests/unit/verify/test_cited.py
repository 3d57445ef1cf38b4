"""The cited strategy's pure parts: selection (per-URL cap, MMR), stance, the cited result."""
import math
import re
from datetime import date
from types import SimpleNamespace

import pytest

from plugin.verify.cited import (MAX_PER_SIDE, STANCE_MARGIN, best_sentence, cap_per_url,
                                 cited_result, mmr_select, select, stance)
from plugin.verify.scoring import LABELS

Q = [1.0, 0.0, 0.0]
A = [0.82, 0.57, 0.0]          # the most relevant: cos(Q, A) ≈ 0.821
A_TWIN = [0.82, 0.58, 0.0]     # a near-duplicate of A (cos ≈ 1.000), cos(Q, ·) ≈ 0.816
B = [0.8, 0.0, 0.6]            # a little less relevant (0.800), different (cos(A, B) ≈ 0.657)


@pytest.mark.parametrize("vecs, k, lam, expected", [
    ([A, A_TWIN, B], 2, 0.7, [0, 2]),      # diverse over the near-duplicate
    ([A, A_TWIN, B], 2, 1.0, [0, 1]),      # relevance only: the twin comes second
    ([A, A_TWIN, B], 3, 0.7, [0, 2, 1]),   # everything, the twin last
    ([A_TWIN, A, B], 1, 0.5, [1]),         # the first pick is the most relevant
    ([A, A], 2, 0.5, [0, 1]),              # exact ties go to the earlier passage
    ([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0]], 1, 0.7, [0]),  # vectors are normalised first
    ([], 3, 0.7, []),
    ([A, B], 0, 0.7, []),
])
def test_mmr_select(vecs, k, lam, expected):
    assert mmr_select(Q, vecs, k, lam) == expected


def test_mmr_select_scores_by_hand():
    """After A, the twin scores λ·0.816 − (1 − λ)·1.000 and B λ·0.800 − (1 − λ)·0.657: B wins
    at λ = 0.7 (0.272 < 0.363) and 0.9 (0.635 < 0.654); at λ = 1 the twin's relevance wins."""
    assert [mmr_select(Q, [A, A_TWIN, B], 2, lam) for lam in (0.5, 0.7, 0.9, 1.0)] == [
        [0, 2], [0, 2], [0, 2], [0, 1]]


@pytest.mark.parametrize("urls, per_url, expected", [
    (["https://a.org/x", "https://a.org/x", "https://a.org/x", "https://b.org/y"], 2, [0, 1, 3]),
    (["https://a.org/x", "http://www.a.org/x/", "https://b.org/y"], 1, [0, 2]),  # one page, two spellings
    (["https://web.archive.org/web/2020/https://a.org/x", "https://a.org/x"], 1, [0]),
    ([None, None, "https://a.org/x"], 1, [0, 1, 2]),   # no URL: its own page
    (["https://a.org/x", "https://a.org/y"], 1, [0, 1]),  # pages, not sites
])
def test_cap_per_url(urls, per_url, expected):
    assert cap_per_url(urls, per_url) == expected


def passage(i, url, vec=None, **kw):
    return {"id": f"p{i}", "url": url, "text": f"Passage {i}.", "embedding": vec, **kw}


def test_select_caps_pages_first_then_applies_mmr():
    ps = [passage(0, "https://a.org/x", A), passage(1, "https://a.org/x", A_TWIN),
          passage(2, "https://a.org/x", A), passage(3, "https://b.org/y", B)]
    assert select(Q, ps, 3, 2, None) == [0, 1, 3]      # the cap alone: the third of a.org/x is out
    assert select(Q, ps, 2, 2, 0.7) == [0, 3]          # then MMR picks the other page over the twin
    assert select(Q, ps, 2, 1, 0.7) == [0, 3]
    assert select(None, ps, 2, 2, 0.7) == [0, 1]       # no query vector: the cap alone
    ps[3]["embedding"] = None
    assert select(Q, ps, 2, 2, 0.7) == [0, 1]          # a passage without its vector: the cap alone


def scores(s, r, nee=0.0):
    rest = max(0.0, 1.0 - s - r - nee)
    return dict(zip(LABELS, (s, r, nee, rest)))


@pytest.mark.parametrize("probs, expected", [
    (scores(0.6, 0.2), ("supports", 0.4)),
    (scores(0.2, 0.7), ("refutes", 0.5)),
    (scores(0.45, 0.45 - STANCE_MARGIN), ("supports", STANCE_MARGIN)),  # exactly the margin
    (scores(0.3, 0.2), ("supports", 0.1)),       # 0.3 − 0.2 < 0.1 in floating point, yet the margin
    (scores(0.2, 0.3), ("refutes", 0.1)),
    (scores(0.45, 0.45 - STANCE_MARGIN / 2), ("neither", 0.0)),        # under it
    (scores(0.3, 0.3, nee=0.4), ("neither", 0.0)),
    (scores(0.05, 0.3, nee=0.6), ("refutes", 0.25)),  # the other labels do not count
    ({}, ("neither", 0.0)),
])
def test_stance(probs, expected):
    side, strength = stance(probs)
    assert (side, strength) == (expected[0], pytest.approx(expected[1], abs=1e-4))


@pytest.mark.parametrize("claim, text, expected", [
    ("5G masts spread the coronavirus",
     "5G is fast, they say. Radio waves from 5G masts cannot spread a virus like the coronavirus. Enjoy.",
     "Radio waves from 5G masts cannot spread a virus like the coronavirus."),
    ("Nothing in common", "First sentence of four. Second sentence of four.", "First sentence of four."),
    ("5G causes COVID-19.", "No. Most of the 5G out there is not new. Radio is old.",  # 5g counts
     "No. Most of the 5G out there is not new."),  # a short sentence goes with the next
    ("x", "Yes. It is.", "Yes. It is."),
    ("x", "", ""),
])
def test_best_sentence(claim, text, expected):
    assert best_sentence(claim, text) == expected


def test_best_sentence_is_trimmed_at_a_word():
    quote = best_sentence("words", "words " * 100, max_chars=30)
    assert len(quote) <= 30 and quote.endswith("\u2026") and quote[:-1].strip().split(" ")[-1] == "words"


CLAIM = "5G masts spread the coronavirus"
PASSAGES = [
    {"id": "a", "url": "https://who.example.org/covid", "domain": "who.example.org", "published_at": "2020-04-02",
     "text": "Viruses cannot travel on radio waves. 5G masts do not spread the coronavirus."},
    {"id": "b", "url": "https://blog.example.com/5g", "domain": "blog.example.com", "published_at": None,
     "text": "My neighbour says 5G masts spread the coronavirus."},
    {"id": "c", "url": "https://telecom.example.com/5g", "domain": "telecom.example.com",
     "published_at": "2019-11-20", "text": "5G is the fifth generation of mobile networks."},
    {"id": "d", "url": "https://news.example.com/a", "domain": "news.example.com", "published_at": "2020-05-01",
     "text": "Scientists say there is no link between 5G masts and the coronavirus."},
    {"id": "e", "url": "https://more.example.com/a", "domain": "more.example.com", "published_at": "2020-05-02",
     "text": "Health agencies found no link between masts and the coronavirus."},
]
VERDICT = scores(0.1, 0.7, nee=0.1)


def cited_numbers(out):
    found = {int(n) for n in re.findall(r"\[(\d+)\]", out["justification"])}
    return found | {n for st in out["statements"] for n in st["sources"]}


@pytest.mark.parametrize("stances, expected", [
    # refutes: a (0.6), d (0.5), e (0.2) → the strongest two; supports: b (0.3); refutes lead
    ([("refutes", 0.6), ("supports", 0.3), ("neither", 0.0), ("refutes", 0.5), ("refutes", 0.2)],
     [("refutes", [1]), ("refutes", [4]), ("supports", [2])]),
    # the stronger side first
    ([("refutes", 0.2), ("supports", 0.9), ("neither", 0.0), ("neither", 0.0), ("neither", 0.0)],
     [("supports", [2]), ("refutes", [1])]),
    ([("neither", 0.0)] * 5, [(None, [1, 2, 3, 4, 5])]),
])
def test_cited_result_statements_cite_real_passages(stances, expected):
    out = cited_result(CLAIM, PASSAGES, stances, VERDICT).to_dict()
    got = [(next((s for s in ("supports", "refutes") if f" {s} the claim: \u201c" in st["text"]), None), st["sources"])
           for st in out["statements"]]
    assert got == expected
    assert cited_numbers(out) <= set(range(1, len(out["qa_pairs"]) + 1))
    assert {c["n"] for c in out["citations"]} == {n for st in out["statements"] for n in st["sources"]}
    assert sum(" supports the claim" in st["text"] for st in out["statements"]) <= MAX_PER_SIDE
    assert out["verdict"] == "Refuted" and out["verdict_source"] == "head"
    assert out["evidence_form"] == "passages" and out["stage"] == "cited"


def test_cited_statement_names_the_source_its_date_and_quotes_the_best_sentence():
    stances = [("refutes", 0.6)] + [("neither", 0.0)] * 4
    out = cited_result(CLAIM, PASSAGES, stances, VERDICT).to_dict()
    assert out["statements"] == [{"text": "who.example.org (2020-04-02) refutes the claim: "
                                          "\u201c5G masts do not spread the coronavirus.\u201d", "sources": [1]}]
    assert out["justification"] == out["statements"][0]["text"] + " [1]"
    undated = cited_result(CLAIM, PASSAGES[1:2], [("supports", 0.3)], VERDICT).to_dict()
    assert undated["statements"][0]["text"].startswith("blog.example.com supports the claim: \u201c")


def test_no_side_is_one_honest_statement_citing_every_passage():
    out = cited_result(CLAIM, PASSAGES[:3], [("neither", 0.0)] * 3, VERDICT).to_dict()
    assert len(out["statements"]) == 1 and out["statements"][0]["sources"] == [1, 2, 3]
    assert out["statements"][0]["text"].startswith("None of the 3 passages found supports or refutes")
    assert out["justification"].endswith("[1, 2, 3]")


def test_qa_pairs_are_the_passages_honestly_labelled():
    stances = [("refutes", 0.6), ("supports", 0.3), ("neither", 0.0), ("refutes", 0.5), ("refutes", 0.2)]
    out = cited_result(CLAIM, PASSAGES, stances, VERDICT).to_dict()
    assert [p["passage_id"] for p in out["qa_pairs"]] == ["a", "b", "c", "d", "e"]
    for p, src, (side, strength) in zip(out["qa_pairs"], PASSAGES, stances):
        assert p == {"question": CLAIM, "answer": src["text"], "answer_kind": "passage",
                     "source_url": src["url"], "passage_id": src["id"], "stance": side,
                     "stance_strength": strength}
    assert out["label_scores"] == VERDICT


def test_no_passages_is_not_enough_evidence_never_a_reading_of_the_claim_alone():
    out = cited_result(CLAIM, [], [], None).to_dict()
    assert out["verdict"] == "Not Enough Evidence" and out["verdict_source"] == "none"
    assert out["statements"] == [] and out["justification"] == "" and out["qa_pairs"] == []
    assert out["citations"] == [] and "no evidence passage" in out["note"]


class Evidence:
    """Stands in for the evidence retriever: the passages (with vectors) it was given."""

    def __init__(self, passages, query_vector):
        self.passages, self.query_vector, self.queries = passages, query_vector, []

    def search(self, q):
        self.queries.append(q)
        kept = [p for p in self.passages if p["url"] not in q.exclude_urls][:q.k]
        return SimpleNamespace(passages=kept, query_vector=self.query_vector if q.vectors else None)


class BatchHead:
    """A verdict model stand-in: Refuted for the passages together, each passage's own scores alone."""

    def __init__(self, alone):
        self.alone, self.calls = alone, []

    def batch_scores(self, items, dates=None):
        self.calls.append((list(items), list(dates or [])))
        return [VERDICT if len(pairs) > 1 else self.alone[pairs[0]["passage_id"]] for _, pairs in items]


def flow_passages():
    vecs = {"a": A, "b": A_TWIN, "c": B, "d": B, "e": A}
    return [{**p, "embedding": vecs[p["id"]]} for p in PASSAGES]


def test_verify_cited_scores_everything_in_one_call_and_never_asks_an_llm():
    from plugin.verify.config import verification_config
    from plugin.verify.verifier import Verifier, VerifyRequest

    alone = {"a": scores(0.1, 0.8), "b": scores(0.6, 0.2), "c": scores(0.3, 0.3), "d": scores(0.2, 0.6),
             "e": scores(0.2, 0.5)}
    head, evidence = BatchHead(alone), Evidence(flow_passages(), Q)
    cfg = verification_config("cited").model_copy(update={"lookup_min_score": None, "lookup_min_confidence": None,
                                                "passages": 3, "mmr_lambda": None, "per_url": 2})
    req = VerifyRequest(claim=CLAIM, date=date(2020, 6, 1), exclude_urls=("https://news.example.com/a",))
    out = Verifier(evidence=evidence, head=head).verify(req, cfg).to_dict()
    (q,) = evidence.queries
    assert q.vectors and q.before == req.date and q.exclude_urls == req.exclude_urls and q.k == cfg.candidates
    (items, dates), = head.calls  # one call: all passages together, then each alone
    assert [len(pairs) for _, pairs in items] == [3, 1, 1, 1] and dates == ["2020-06-01"] * 4
    assert [p["passage_id"] for p in out["qa_pairs"]] == ["a", "b", "c"]
    assert [(p["stance"], p["stance_strength"]) for p in out["qa_pairs"]] == [
        ("refutes", 0.7), ("supports", 0.4), ("neither", 0.0)]
    assert [st["sources"] for st in out["statements"]] == [[1], [2]]
    assert out["verdict"] == "Refuted" and out["tokens"]["calls"] == 0 and "embedding" not in out["qa_pairs"][0]
    assert {"retrieve", "select", "head"} <= set(out["timings_ms"])

    mmr = cfg.model_copy(update={"mmr_lambda": 0.7})  # a's twin b gives way to c
    out = Verifier(evidence=Evidence(flow_passages(), Q), head=BatchHead(alone)).verify(req, mmr).to_dict()
    assert [p["passage_id"] for p in out["qa_pairs"]] == ["a", "c", "e"]


def test_verify_cited_needs_evidence_and_a_verdict_model():
    from plugin.errors import BadInput, ModelUnavailable
    from plugin.verify.config import verification_config
    from plugin.verify.verifier import Verifier, VerifyRequest

    cfg = verification_config("cited").model_copy(update={"lookup_min_score": None, "lookup_min_confidence": None})
    with pytest.raises(BadInput, match="evidence index"):
        Verifier(head=BatchHead({})).verify(VerifyRequest(claim=CLAIM), cfg)
    with pytest.raises(ModelUnavailable, match="train-verdict"):
        Verifier(evidence=Evidence([], Q)).verify(VerifyRequest(claim=CLAIM), cfg)
