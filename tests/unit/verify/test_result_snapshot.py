"""A verification result's dict, byte for byte (key order included), on each path that builds one:
the API's and the job records' JSON must not change while the result's type does (issue 36).
Regenerate only for an intended change: ``FACTSIEVE_UPDATE_SNAPSHOTS=1 pytest this file``."""
from __future__ import annotations

import json
import os
from pathlib import Path

from datetime import date

import pytest

from plugin.errors import NotFound
from plugin.verify.verifier import Verifier, VerifyRequest
from tests.unit.verify import test_cited as cited
from tests.unit.verify.test_verifier import (PASSAGES, Evidence, Head, InvalidLLM, Matcher, ScriptedLLM, answers,
                                             cfg, zero_answers)

SNAPSHOT = Path(__file__).parent / "snapshots" / "verification_results.json"


def _results() -> dict[str, str]:
    from plugin.verify.config import verification_config

    clock = lambda: 0.0  # noqa: E731 (timings 0: the snapshot is of the shape)
    bad = zero_answers()
    gold = VerifyRequest(claim="c", gold_qa=({"question": "q", "answer": "a", "source_url": "u", "passage_id": None},))
    alone = {"a": cited.scores(0.1, 0.8), "b": cited.scores(0.6, 0.2), "c": cited.scores(0.3, 0.3),
             "d": cited.scores(0.2, 0.6), "e": cited.scores(0.2, 0.5)}
    cited_req = VerifyRequest(claim=cited.CLAIM, date=date(2020, 6, 1), exclude_urls=("https://news.example.com/a",))
    cited_cfg = cfg("cited", passages=3, mmr_lambda=0.7, per_url=2)

    def no_index(req):
        raise NotFound("no fact-check index")

    runs = {
        "lookup-found": lambda: Verifier(lookup=Matcher(0.96).match, clock=clock).verify(
            VerifyRequest(claim="c"), verification_config("lookup")),
        "lookup-none": lambda: Verifier(lookup=Matcher(0.90).match, clock=clock).verify(
            VerifyRequest(claim="c"), verification_config("lookup")),
        "qa-loop": lambda: Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES), clock=clock).verify(
            VerifyRequest(claim="The mayor passed a law."), cfg("qa-loop")),
        "single-call": lambda: Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES), clock=clock).verify(
            VerifyRequest(claim="The mayor passed a law."), cfg("single-call")),
        "blend": lambda: Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES), head=Head(), clock=clock,
                                  head_weight=0.5).verify(VerifyRequest(claim="The mayor passed a law."),
                                                          cfg("single-call")),
        "fallback-none": lambda: Verifier(llm=InvalidLLM(bad), evidence=Evidence(PASSAGES), clock=clock).verify(
            VerifyRequest(claim="The mayor passed a law."), cfg("qa-loop")),
        "fallback-head": lambda: Verifier(llm=InvalidLLM(bad), evidence=Evidence(PASSAGES), head=Head(),
                                          clock=clock).verify(VerifyRequest(claim="The mayor passed a law."),
                                                              cfg("qa-loop")),
        "head": lambda: Verifier(evidence=Evidence(PASSAGES), head=Head(), clock=clock).verify(
            VerifyRequest(claim="The mayor passed a law."), cfg("head")),
        "cited": lambda: Verifier(evidence=cited.Evidence(cited.flow_passages(), cited.Q), head=cited.BatchHead(alone),
                                  clock=clock).verify(cited_req, cited_cfg),
        "cited-none": lambda: Verifier(evidence=cited.Evidence([], cited.Q), head=cited.BatchHead(alone),
                                       clock=clock).verify(cited_req, cited_cfg),
        "gold-evidence": lambda: Verifier(llm=ScriptedLLM(answers()), clock=clock).verify(gold, cfg("qa-loop",
                                                                                                   fewshot=0)),
        "blend-qa-loop": lambda: Verifier(llm=ScriptedLLM(answers()), evidence=Evidence(PASSAGES), head=Head(),
                                          clock=clock, head_weight=0.5).verify(
            VerifyRequest(claim="The mayor passed a law."), cfg("qa-loop")),
        "fallback-single-call": lambda: Verifier(llm=InvalidLLM(bad), evidence=Evidence(PASSAGES), head=Head(),
                                                 clock=clock).verify(VerifyRequest(claim="The mayor passed a law."),
                                                                     cfg("single-call")),
        "lookup-skipped": lambda: Verifier(lookup=no_index, clock=clock).verify(
            VerifyRequest(claim="c"), verification_config("lookup")),
    }
    return {name: json.dumps(run().to_dict(), ensure_ascii=False) for name, run in runs.items()}


def test_verification_results_are_byte_compatible():
    got = _results()
    if os.environ.get("FACTSIEVE_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        pytest.fail("snapshot written: review and commit it")
    assert got == json.loads(SNAPSHOT.read_text(encoding="utf-8"))
