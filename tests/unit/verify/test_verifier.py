"""The verification flow's pure parts, and its control flow with a scripted LLM stand-in (the
real local LLM runs in tests/integration/test_verify.py)."""
from __future__ import annotations

from datetime import date, timedelta
from types import SimpleNamespace

import pytest

from plugin.errors import BadInput, LLMNotConfigured
from plugin.verify import prompts, steps
from plugin.verify.config import Strategy, load_configs, verification_config
from plugin.verify.fewshot import FewShotPool, bm25_scores, load_pool, tokens
from plugin.verify.citing import cited_statements, citations
from plugin.verify.result import justification
from plugin.verify.verifier import Verifier, VerifyRequest
from plugin.search.result import Match

SCORES = {"supported": 0.1, "refuted": 0.9, "not_enough_evidence": 0.0, "conflicting": 0.0}


class ScriptedLLM:
    """Answers each schema from a table; counts calls. Stands in for the LLM in flow tests."""

    def __init__(self, answers: dict[type, dict], clock: list[float] | None = None, step: float = 0.0):
        self.answers, self.calls, self.clock, self.step = answers, [], clock, step

    def chat(self, messages, *, schema=None, max_tokens=None, temperature=None):
        self.calls.append(schema.__name__)
        if self.clock is not None:
            self.clock[0] += self.step
        data = next(v for k, v in self.answers.items() if issubclass(schema, k))  # bounded variants
        data = data(len(self.calls)) if callable(data) else data
        return SimpleNamespace(parsed=schema.model_validate(data), prompt_tokens=10, completion_tokens=5)


class Evidence:
    def __init__(self, passages):
        self.passages, self.queries = passages, []

    def search(self, q):
        self.queries.append({"text": q.text, "before": q.before, "exclude_urls": q.exclude_urls})
        return SimpleNamespace(passages=[p for p in self.passages if p["url"] not in q.exclude_urls][:q.k])


PASSAGES = [{"id": "p1", "url": "https://a.example/1", "title": "A", "text": "The mayor denied it.",
             "published_at": "2020-01-01"},
            {"id": "p2", "url": "https://b.example/2", "title": "B", "text": "Records show no such law.",
             "published_at": "2020-01-02"}]


def answers(decisive: float = 0.9, question=lambda n: {"question": f"Question number {n}?"}):
    return {steps.NextQuestion: question,
            steps.HydePassage: {"passage": "A hypothetical answer."},
            steps.GroundedAnswer: {"answer": "The mayor denied it.", "source": 1},
            steps.EvidenceSummary: {"summary": "Denied.", "label_scores": {**SCORES, "refuted": decisive}},
            steps.VerdictOut: {"label_scores": SCORES, "verdict": "Refuted",
                               "statements": [{"text": "The mayor denied it.", "sources": [1]},
                                              {"text": "Uncited.", "sources": [9]}]},
            steps.SingleCallOut: {"qa_pairs": [{"question": "Did it pass?", "answer": "No.", "source": 2},
                                               {"question": "Who said so?", "answer": "?", "source": 7}],
                                  "label_scores": SCORES, "verdict": "Refuted",
                                  "statements": [{"text": "No law passed.", "sources": [1]}]}}


def cfg(name: str, **changes):
    return verification_config(name).model_copy(update={"lookup_min_score": None, "lookup_min_confidence": None,
                                               **changes})


def test_packaged_configs_cover_every_strategy():
    configs = load_configs()
    assert {c.strategy for c in configs.values()} == set(Strategy)
    assert verification_config().name == "qa-loop"
    with pytest.raises(BadInput, match="unknown verification configuration"):
        verification_config("nope")


def test_prompts_render_and_refuse_missing_values():
    msgs = prompts.messages("answer", claim="C", question="Q?", passages="[1] P")
    assert msgs[0]["role"] == "system" and "Question: Q?" in msgs[1]["content"]
    with pytest.raises(KeyError):
        prompts.messages("answer", claim="C")
    assert all(v >= 1 for v in prompts.versions().values())


def test_bm25_prefers_shared_rare_words_and_pool_excludes_the_claim_itself():
    docs = [tokens("vaccine causes autism"), tokens("the president signed a law"), tokens("law")]
    s = bm25_scores(tokens("president law"), docs)
    assert s[1] > s[2] > s[0] == 0.0
    pool = FewShotPool(({"id": "a", "claim": "vaccine autism"}, {"id": "b", "claim": "vaccine law"}))
    assert [e["id"] for e in pool.select("vaccine autism claim", 2)] == ["a", "b"]
    assert [e["id"] for e in pool.select("vaccine autism claim", 2, exclude=frozenset({"a"}))] == ["b"]
    assert len(load_pool().examples) == 40


def test_statements_keep_only_real_citations():
    st = [steps.Statement(text="Kept.", sources=[2, 1, 2, 5]), steps.Statement(text="Gone.", sources=[3])]
    kept, dropped = cited_statements(st, 2)
    assert [st.to_dict() for st in kept] == [{"text": "Kept.", "sources": [1, 2]}] and dropped == 1
    assert justification(kept) == "Kept. [1, 2]"
    pairs = [{"question": "q1", "source_url": "u1", "passage_id": "p1"},
             {"question": "q2", "source_url": None, "passage_id": None}]
    assert [c.n for c in citations(pairs, kept)] == [1, 2]
    assert [c.n for c in citations(pairs, [])] == [1]  # nothing cited: the answered pairs


def test_label_scores_are_clamped_not_refused():
    s = steps.LabelScores(supported=80, refuted=-1, not_enough_evidence=0.5, conflicting=1)
    assert s.by_label() == {"Supported": 0.8, "Refuted": 0.0, "Not Enough Evidence": 0.5,
                            "Conflicting Evidence/Cherrypicking": 1.0}


def test_bad_requests_are_refused():
    v = Verifier()
    for req, why in ((VerifyRequest(claim="  "), "empty"),
                     (VerifyRequest(claim="x" * 20001), "longer"),
                     (VerifyRequest(claim="c", date=date.today() + timedelta(days=2)), "future"),
                     (VerifyRequest(claim="c", budget_s=0), "budget")):
        with pytest.raises(BadInput, match=why):
            v.verify(req, cfg("qa-loop"))


def test_qa_loop_stops_once_decisive_and_cites_its_pairs():
    llm, ev = ScriptedLLM(answers()), Evidence(PASSAGES)
    out = Verifier(llm=llm, evidence=ev).verify(
        VerifyRequest(claim="The mayor passed a law", date=date(2020, 3, 1),
                      exclude_urls=("https://b.example/2",)), cfg("qa-loop", fewshot=0)).to_dict()
    assert out["stopped_because"] == "decisive" and len(out["qa_pairs"]) == 1
    assert llm.calls == ["NextQuestion", "HydePassage", "GroundedAnswer", "EvidenceSummary", "VerdictOut"]
    assert out["qa_pairs"][0] == {"question": "Question number 1?", "answer": "The mayor denied it.",
                                  "source_url": "https://a.example/1", "passage_id": "p1"}
    assert ev.queries[0]["before"] == date(2020, 3, 1) and ev.queries[0]["exclude_urls"] == ("https://b.example/2",)
    assert out["verdict"] == "Refuted" and out["justification"] == "The mayor denied it. [1]"
    assert out["uncited_statements_dropped"] == 1 and out["citations"][0]["url"] == "https://a.example/1"
    assert out["tokens"] == {"prompt": 50, "completion": 25, "calls": 5}
    assert set(out["timings_ms"]) >= {"question", "hyde", "retrieve", "answer", "summary", "verdict", "total"}


def test_qa_loop_runs_out_of_turns_and_of_budget():
    llm = ScriptedLLM(answers(decisive=0.5))
    out = Verifier(llm=llm, evidence=Evidence(PASSAGES)).verify(
        VerifyRequest(claim="c"), cfg("qa-loop", max_turns=2, hyde=False, fewshot=0)).to_dict()
    assert out["stopped_because"] == "max-turns" and len(out["qa_pairs"]) == 2
    clock = [0.0]
    llm = ScriptedLLM(answers(decisive=0.5), clock=clock, step=4.0)
    out = Verifier(llm=llm, evidence=Evidence(PASSAGES), clock=lambda: clock[0]).verify(
        VerifyRequest(claim="c", budget_s=10), cfg("qa-loop", hyde=False, fewshot=0)).to_dict()
    assert out["stopped_because"] == "budget" and out["budget_s"] == 10 and len(out["qa_pairs"]) == 1
    assert out["verdict"] == "Refuted"  # the verdict step still runs on what was found


def test_qa_loop_never_repeats_a_question():
    llm = ScriptedLLM(answers(decisive=0.5, question={"question": "Same question?"}))
    out = Verifier(llm=llm, evidence=Evidence(PASSAGES)).verify(
        VerifyRequest(claim="c"), cfg("qa-loop", hyde=False, fewshot=0)).to_dict()
    assert out["stopped_because"] == "no-new-question" and len(out["qa_pairs"]) == 1


def test_single_call_maps_sources_to_passages():
    out = Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES)).verify(
        VerifyRequest(claim="c"), cfg("single-call", fewshot=0)).to_dict()
    assert out["stage"] == "single-call" and out["retrieved"] == 2
    assert out["qa_pairs"][0]["source_url"] == "https://b.example/2"
    assert out["qa_pairs"][1]["answer"] == "No answer could be found."  # source 7 does not exist


def test_single_call_asks_for_at_most_max_pairs_in_the_prompt_and_the_schema():
    from plugin.llm import json_schema_format

    assert steps.single_call_schema() is steps.SingleCallOut
    bounded = steps.single_call_schema(1)
    assert bounded is steps.single_call_schema(1)  # one class per bound
    schema = json_schema_format(bounded)["json_schema"]["schema"]
    assert schema["properties"]["qa_pairs"]["maxItems"] == 1
    two = {"question": "Q?", "answer": "A.", "source": 1}
    assert len(bounded.model_validate({**answers()[steps.SingleCallOut], "qa_pairs": [two, two]}).qa_pairs) == 1
    with pytest.raises(ValueError):
        steps.single_call_schema(11)
    llm = ScriptedLLM(answers())
    out = Verifier(llm=llm, evidence=Evidence(PASSAGES)).verify(
        VerifyRequest(claim="c"), cfg("single-call", fewshot=0, max_pairs=1)).to_dict()
    assert llm.calls == ["SingleCallOut1"] and len(out["qa_pairs"]) == 1
    assert "at most 1 questions" in prompts.messages(
        "single_call", examples="", claim="c", date="d", max_pairs=1, passages="")[1]["content"]


def test_gold_evidence_goes_straight_to_the_verdict():
    llm = ScriptedLLM(answers())
    gold = ({"question": "q", "answer": "a", "source_url": "u", "passage_id": None},)
    out = Verifier(llm=llm).verify(VerifyRequest(claim="c", gold_qa=gold), cfg("qa-loop", fewshot=0)).to_dict()
    assert llm.calls == ["VerdictOut"] and out["stage"] == "gold-evidence" and out["qa_pairs"] == list(gold)


def test_no_llm_is_a_clear_error():
    with pytest.raises(LLMNotConfigured, match="FACTSIEVE_LLM_URL"):
        Verifier(evidence=Evidence(PASSAGES)).verify(VerifyRequest(claim="c"), cfg("single-call"))


class Matcher:
    def __init__(self, score, confidence=None):
        self.score = score
        self.confidence = confidence

    def match(self, req):
        return Match.from_dict({"matches": [{"id": "f1", "rank": 1, "url": "https://fc.example/1", "score": 0.048,
                                             "confidence": self.confidence,
                                             "explain": {"bm25:post": {"score": 12.0},
                                                         "dense:post": {"score": self.score}},
                                             "claim": "Mayor passed law", "rating": "False",
                                             "verdict": "Refuted", "publisher": "FC"}]})


def test_lookup_answers_above_the_threshold_and_falls_through_below():
    out = Verifier(lookup=Matcher(0.96).match).verify(VerifyRequest(claim="c"), verification_config("lookup")).to_dict()
    assert out["stage"] == "previously-fact-checked" and out["verdict"] == "Refuted"
    assert out["citations"][0]["url"] == "https://fc.example/1" and out["justification"].endswith("[1]")
    out = Verifier(lookup=Matcher(0.90).match).verify(VerifyRequest(claim="c"), verification_config("lookup")).to_dict()
    assert out["stage"] == "lookup" and out["verdict"] == "Not Enough Evidence"
    assert "under the threshold" in out["note"]
    out = Verifier(lookup=Matcher(0.96).match).verify(
        VerifyRequest(claim="c", exclude_urls=("https://fc.example/1",)), verification_config("lookup")).to_dict()
    assert out["stage"] == "lookup"  # the claim's own fact-check never answers it


def test_the_lookup_reads_the_calibrated_confidence_first():
    lookup = verification_config("lookup")
    assert lookup.lookup_min_confidence == 0.9
    # a sure match by confidence answers even though its kNN similarity is under lookup_min_score
    out = Verifier(lookup=Matcher(0.90, confidence=0.93).match).verify(VerifyRequest(claim="c"), lookup).to_dict()
    assert out["stage"] == "previously-fact-checked"
    out = Verifier(lookup=Matcher(0.99, confidence=0.5).match).verify(VerifyRequest(claim="c"), lookup).to_dict()
    assert out["stage"] == "lookup" and "confidence is 0.5000, under the threshold 0.9" in out["note"]
    assert out["match"]["confidence"] == 0.5
    # no confidence (a configuration without a confidence model): the similarity threshold
    out = Verifier(lookup=Matcher(0.96).match).verify(VerifyRequest(claim="c"), lookup).to_dict()
    assert out["stage"] == "previously-fact-checked"
    off = lookup.model_copy(update={"lookup_min_score": None, "lookup_min_confidence": None})
    assert Verifier(lookup=Matcher(0.99, 0.99).match).verify(VerifyRequest(claim="c"), off).to_dict()["stage"] != \
        "previously-fact-checked"


def test_statements_are_bounded_like_the_prompt_says_and_extras_are_cut():
    st = {"text": "S.", "sources": [1]}
    out = steps.VerdictOut.model_validate({"label_scores": SCORES, "verdict": "Refuted", "statements": [st] * 5})
    assert len(out.statements) == steps.MAX_STATEMENTS == 3
    from plugin.llm import json_schema_format

    schema = json_schema_format(steps.VerdictOut)["json_schema"]["schema"]
    assert schema["properties"]["statements"]["maxItems"] == 3
    with pytest.raises(ValueError):
        steps.VerdictOut.model_validate({"label_scores": SCORES, "verdict": "Refuted", "statements": []})


# -- no bluffing: a verdict is supported by its ratings -----------------------------------------
ZERO = {"supported": 0.0, "refuted": 0.0, "not_enough_evidence": 0.0, "conflicting": 0.0}


@pytest.mark.parametrize(("scores", "verdict", "problem"), [
    ({"Supported": 0.0, "Refuted": 0.0, "Not Enough Evidence": 0.0, "Conflicting Evidence/Cherrypicking": 0.0},
     "Supported", "every label is rated 0"),
    ({}, "Refuted", "every label is rated 0"),
    ({"Supported": 0.1, "Refuted": 0.9, "Not Enough Evidence": 0.0, "Conflicting Evidence/Cherrypicking": 0.0},
     "Supported", "under 'Refuted' at 0.90"),
    ({"Supported": 0.0, "Refuted": 0.0, "Not Enough Evidence": 0.3, "Conflicting Evidence/Cherrypicking": 0.0},
     "Refuted", "the verdict must be the label with the highest rating"),
    ({"Supported": 0.1, "Refuted": 0.9, "Not Enough Evidence": 0.0, "Conflicting Evidence/Cherrypicking": 0.0},
     "Refuted", None),
    ({"Supported": 0.5, "Refuted": 0.5, "Not Enough Evidence": 0.0, "Conflicting Evidence/Cherrypicking": 0.0},
     "Supported", None),  # a tie with the highest supports the verdict
    ({"Supported": 0.01, "Refuted": 0.0, "Not Enough Evidence": 0.0, "Conflicting Evidence/Cherrypicking": 0.0},
     "Supported", None),
])
def test_ratings_problem_is_the_one_rule(scores, verdict, problem):
    assert steps.LABELS[3] == "Conflicting Evidence/Cherrypicking"
    got = steps.ratings_problem(scores, verdict)
    assert (got is None) if problem is None else (problem in got)


def test_verdict_schemas_refuse_ratings_that_do_not_support_the_verdict():
    statements = [{"text": "x", "sources": [1]}]
    for scores, verdict in ((ZERO, "Supported"), (SCORES, "Supported")):
        with pytest.raises(ValueError, match="rated"):
            steps.VerdictOut.model_validate({"label_scores": scores, "verdict": verdict, "statements": statements})
        with pytest.raises(ValueError, match="rated"):
            steps.single_call_schema(2).model_validate(
                {"qa_pairs": [{"question": "q", "answer": "a", "source": 1}], "label_scores": scores,
                 "verdict": verdict, "statements": statements})
    assert steps.VerdictOut.model_validate({"label_scores": SCORES, "verdict": "Refuted",
                                            "statements": statements}).verdict.value == "Refuted"
    # the summary's ratings carry no verdict: all zero there is no error
    assert steps.EvidenceSummary.model_validate({"summary": "s", "label_scores": ZERO})
    # the grammar-constrained order is unchanged: the pairs before the ratings
    assert list(steps.SingleCallOut.model_fields)[0] == "qa_pairs"


class InvalidLLM(ScriptedLLM):
    """A scripted LLM whose verdict-bearing answers are invalid after the client's retry, as the
    real client reports it (``LLMOutputInvalid``)."""

    def chat(self, messages, *, schema=None, max_tokens=None, temperature=None):
        from pydantic import ValidationError

        from plugin.errors import LLMOutputInvalid

        try:
            return super().chat(messages, schema=schema, max_tokens=max_tokens, temperature=temperature)
        except ValidationError as exc:
            raise LLMOutputInvalid(f"no valid {schema.__name__} after one retry ({exc.errors()[0]['msg']})") from exc


class Head:
    def __init__(self):
        self.seen = []

    def label_scores(self, claim, pairs, date=None):
        self.seen.append((claim, list(pairs)))
        self.dates = [*getattr(self, "dates", []), date]
        return {"Supported": 0.1, "Refuted": 0.7, "Not Enough Evidence": 0.15,
                "Conflicting Evidence/Cherrypicking": 0.05}


def zero_answers(verdict="Supported", scores=ZERO):
    a = answers(decisive=0.5)
    a[steps.VerdictOut] = {**a[steps.VerdictOut], "label_scores": scores, "verdict": verdict}
    a[steps.SingleCallOut] = {**a[steps.SingleCallOut], "label_scores": scores, "verdict": verdict}
    return a


@pytest.mark.parametrize("name", ["qa-loop", "single-call"])
def test_all_zero_ratings_never_yield_a_verdict_on_their_own(name):
    run = dict(evidence=Evidence(PASSAGES))
    conf = cfg(name, fewshot=0, hyde=False, max_turns=1)
    # with a head: the head's verdict, and the result says so and why
    head = Head()
    out = Verifier(llm=InvalidLLM(zero_answers()), head=head, **run).verify(VerifyRequest(claim="c"), conf).to_dict()
    assert out["verdict"] == "Refuted" and out["verdict_source"] == "head"
    assert out["label_scores"]["Refuted"] == 0.7 and "every label is rated 0" in out["fallback_reason"]
    assert head.seen and head.seen[0][1] == out["qa_pairs"] and out["qa_pairs"]
    # without one: Not Enough Evidence, with the reason; never the LLM's "Supported"
    out = Verifier(llm=InvalidLLM(zero_answers()), **run).verify(VerifyRequest(claim="c"), conf).to_dict()
    assert out["verdict"] == "Not Enough Evidence" and out["verdict_source"] == "none"
    assert out["label_scores"] == {} and "no verdict head" in out["fallback_reason"]
    assert "every label is rated 0" in out["fallback_reason"]


def test_a_verdict_that_is_not_the_highest_rating_falls_back():
    out = Verifier(llm=InvalidLLM(zero_answers("Supported", SCORES)), head=Head()).verify(
        VerifyRequest(claim="c", gold_qa=({"question": "q", "answer": "a", "source_url": "u"},)),
        cfg("qa-loop", fewshot=0)).to_dict()
    assert out["verdict_source"] == "head" and out["verdict"] == "Refuted"
    assert "'Supported' is rated 0.10, under 'Refuted' at 0.90" in out["fallback_reason"]


def test_verdict_source_says_where_each_verdict_came_from():
    conf = cfg("qa-loop", fewshot=0, hyde=False)
    out = Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES), head=Head()).verify(
        VerifyRequest(claim="c"), conf).to_dict()
    assert out["verdict_source"] == "llm" and "fallback_reason" not in out  # head_weight 0: no blend
    out = Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES), head=Head()).verify(
        VerifyRequest(claim="c"), conf.model_copy(update={"head_weight": 0.5})).to_dict()
    assert out["verdict_source"] == "llm+head" and out["verdict"] == "Refuted"
    scores = out["label_scores"]
    assert steps.ratings_problem(scores, out["verdict"]) is None  # a blend is supported by construction
    assert out["head_weight"] == 0.5 and out["label_scores_llm"]["Refuted"] == 0.9
    out = Verifier(evidence=Evidence(PASSAGES), head=Head()).verify(VerifyRequest(claim="c"), cfg("head")).to_dict()
    assert out["verdict_source"] == "head" and "fallback_reason" not in out
    out = Verifier(lookup=Matcher(0.96).match).verify(VerifyRequest(claim="c"), verification_config("lookup")).to_dict()
    assert out["verdict_source"] == "fact-check"
    out = Verifier(lookup=Matcher(0.90).match).verify(VerifyRequest(claim="c"), verification_config("lookup")).to_dict()
    assert out["verdict_source"] == "none"


def test_unsupported_ratings_are_retried_once_by_the_client_then_invalid(monkeypatch):
    """The real client: an answer whose ratings do not support its verdict is retried once with
    the reason shown to the model; a good second answer is used, a second bad one is invalid."""
    import json

    from plugin.errors import LLMOutputInvalid
    from plugin.llm import LLMClient
    from plugin.llm.client import _Answer
    from plugin.settings import Settings

    bad = {"label_scores": ZERO, "verdict": "Supported", "statements": [{"text": "x", "sources": [1]}]}
    good = {**bad, "label_scores": SCORES, "verdict": "Refuted"}

    def scripted(replies):
        sent = []

        def complete(self, body):
            sent.append(body)
            return _Answer(text=json.dumps(replies[len(sent) - 1]), prompt_tokens=1, completion_tokens=1,
                           seconds=0.0, finish_reason="stop")
        monkeypatch.setattr(LLMClient, "_complete", complete)
        return sent

    client = LLMClient(Settings(llm_url="http://llm.invalid/v1"))
    sent = scripted([bad, good])
    reply = client.chat([{"role": "user", "content": "verdict?"}], schema=steps.VerdictOut)
    assert reply.attempts == 2 and reply.parsed.verdict.value == "Refuted"
    assert "every label is rated 0" in sent[1]["messages"][-1]["content"]  # the reason, shown
    sent = scripted([bad, bad, good])
    with pytest.raises(LLMOutputInvalid, match="every label is rated 0") as err:
        client.chat([{"role": "user", "content": "verdict?"}], schema=steps.VerdictOut)
    assert err.value.prompt_tokens == 2 and err.value.completion_tokens == 2
    assert len(sent) == 2  # once, never more
    # and the verifier: two bad answers → the head decides
    sent = scripted([bad, bad])
    out = Verifier(llm=client, head=Head()).verify(
        VerifyRequest(claim="c", gold_qa=({"question": "q", "answer": "a", "source_url": "u"},)),
        cfg("qa-loop", fewshot=0)).to_dict()
    assert len(sent) == 2 and out["verdict_source"] == "head" and out["verdict"] == "Refuted"
    assert out["tokens"] == {"prompt": 2, "completion": 2, "calls": 1}  # both attempts counted


def test_the_blend_weight_comes_from_the_verifier_unless_the_configuration_sets_one():
    """``head_weight`` None (the packaged configurations): the weight the verifier was given
    for its LLM (``Verification.blend_weight``); a number in the configuration overrides it. At 1
    the LLM's ratings count for nothing, and the result still says the verdict is a blend."""
    conf = cfg("qa-loop", fewshot=0, hyde=False)
    assert conf.head_weight is None
    disagree = answers()
    disagree[steps.VerdictOut] = {**disagree[steps.VerdictOut], "verdict": "Supported",
                                  "label_scores": {**SCORES, "supported": 0.95}}
    gold = VerifyRequest(claim="c", gold_qa=({"question": "q", "answer": "a", "source_url": "u"},))

    def verify(weight, config):
        return Verifier(llm=ScriptedLLM(disagree), head=Head(), head_weight=weight).verify(gold, config).to_dict()

    assert verify(0.0, conf)["verdict_source"] == "llm" and verify(0.0, conf)["verdict"] == "Supported"
    out = verify(1.0, conf)
    assert out["verdict_source"] == "llm+head" and out["verdict"] == "Refuted" and out["head_weight"] == 1.0
    assert out["label_scores"] == out["label_scores_head"] and out["label_scores_llm"]["Supported"] == 0.95
    out = verify(1.0, conf.model_copy(update={"head_weight": 0.0}))  # the configuration overrides
    assert out["verdict_source"] == "llm" and out["verdict"] == "Supported"
    out = Verifier(llm=ScriptedLLM(disagree), head_weight=1.0).verify(gold, conf).to_dict()  # no head: no blend
    assert out["verdict_source"] == "llm" and "head_weight" not in out


def test_the_verdict_model_reads_the_claims_date_wherever_it_decides():
    """The fine-tuned verdict model was trained with the claim's date: the head strategy, the
    fallback and the blend all hand it over."""
    from datetime import date

    head = Head()
    req = VerifyRequest(claim="c", date=date(2020, 3, 1))
    Verifier(evidence=Evidence(PASSAGES), head=head).verify(req, cfg("head"))
    Verifier(llm=InvalidLLM(zero_answers()), evidence=Evidence(PASSAGES), head=head).verify(req, cfg("single-call"))
    assert head.dates == ["2020-03-01", "2020-03-01"]
