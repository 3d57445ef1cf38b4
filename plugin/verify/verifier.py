"""Claim verification for a claim nobody has checked yet, and the lookup for one somebody has.

``Verifier.verify`` runs one named configuration (``config.py``) for one claim and returns the
result every channel shares (job result, ``factsieve verify --json``, the ``claim.verified``
webhook), typed (``result.VerificationResult``; its ``to_dict()`` is the JSON, at those edges):
verdict, label ratings, question–answer evidence with sources, a justification whose
statements cite those pairs, why it stopped, and where the time and tokens went. Each strategy
builds its ``result.Outcome``; ``verify`` builds the result from it, in one place.

Its parts are handed in — the match path for the lookup, an evidence searcher, the LLM client, the
few-shot pool, optionally the verdict head — so the flow is testable with any of them and the
I/O stays at the edges.

No bluffing: a verdict is supported by its label ratings. The verdict steps' schemas
(``steps.VerdictOut``, ``steps.SingleCallOut``) refuse ratings that do not support the LLM's
verdict (``steps.ratings_problem``: every label rated 0, or the chosen label rated under
another), so the LLM client retries such an answer once and then raises ``LLMOutputInvalid``.
The verdict then comes from the verdict head; without one it is Not Enough Evidence. Every
result says where its verdict came from (``verdict_source``, :data:`VERDICT_SOURCES`) and, for
a fallback, why (``fallback_reason``).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol

from plugin.errors import BadInput, LLMOutputInvalid, NotFound
from plugin.evidence.retrieve import EvidenceQuery
from plugin.models import MAX_TEXT_CHARS, Verdict
from plugin.verify import prompts, steps
from plugin.verify.blend import blended
from plugin.verify.citing import cited_statements, citations
from plugin.verify.config import Strategy, VerificationConfig
from plugin.verify.fewshot import FewShotPool
from plugin.verify.lookup import clears, fact_check_found, looks_up, no_fact_check  # noqa: F401 (looks_up: re-exported)
from plugin.verify.result import Blend, Outcome, Tokens, VerificationResult
from plugin.verify.scoring import NO_ANSWER

if TYPE_CHECKING:
    from plugin.search.request import MatchRequest
    from plugin.search.result import Match

#: how many fact-checks the lookup asks for (the best one not excluded answers)
LOOKUP_K = 5

Progress = Callable[[str, int | None], None]

#: Where a result's verdict came from (its ``verdict_source``).
VERDICT_SOURCES = {
    "llm": "the LLM's verdict, supported by its ratings",
    "llm+head": "the highest of the LLM's ratings blended with the verdict model's (the blend weight)",
    "head": "the verdict model: the head or cited configuration, or the fallback after invalid LLM output",
    "fact-check": "the rating of a published fact-check that matches the claim",
    "none": "Not Enough Evidence because nothing could decide (see fallback_reason or note)",
}


class EvidenceSearch(Protocol):
    """Hybrid evidence retrieval with the task's constraints pushed into the query
    (``plugin.evidence.retrieve.EvidenceRetriever``): its result has ``passages``."""

    def search(self, q: EvidenceQuery) -> Any: ...


class VerdictHead(Protocol):
    """A verdict model without an LLM (``plugin.verify.head.VerdictHead``, or the fine-tuned
    cross-encoder): the four labels' probabilities for a claim, its ISO date (``None`` when not
    known) and its question–answer evidence; ``batch_scores`` does many at once."""

    def label_scores(self, claim: str, qa_pairs: list[dict[str, Any]],
                     date: str | None = None) -> dict[str, float]: ...

    def batch_scores(self, items: Any, dates: Any = None) -> list[dict[str, float]]: ...


@dataclass(frozen=True)
class VerifyRequest:
    claim: str
    date: date | None = None
    lang: str | None = None
    exclude_urls: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()
    #: overrides the configuration's budget (seconds)
    budget_s: float | None = None
    #: the claim's id in a dataset: its own few-shot example is never shown to it
    claim_id: str | None = None
    #: gold question–answer evidence: the verdict step runs on it alone (``--evidence gold``)
    gold_qa: tuple[dict[str, Any], ...] | None = None

    def validated(self, today: date | None = None) -> VerifyRequest:
        if not isinstance(self.claim, str) or not self.claim.strip():
            raise BadInput("claim is empty: give the claim to verify")
        if len(self.claim) > MAX_TEXT_CHARS:
            raise BadInput(f"claim is longer than {MAX_TEXT_CHARS} characters")
        if self.date is not None and self.date > (today or date.today()):
            raise BadInput(f"the claim date {self.date.isoformat()} is in the future")
        if self.budget_s is not None and not 0 < self.budget_s <= 3600:
            raise BadInput("budget_s must be between 0 and 3600 seconds")
        return self


class _OutOfBudget(Exception):
    """The evidence loop's time is up: raised between steps, never inside one."""


@dataclass
class _Run:
    """What one verification has spent and found so far."""

    deadline: float
    clock: Callable[[], float]
    progress: Progress
    timings: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=lambda: {"prompt": 0, "completion": 0})
    calls: int = 0
    #: the lookup's best match (shown when it did not clear the threshold)
    lookup: dict[str, Any] | None = None
    #: the qa-loop's last evidence summary
    summary: str | None = None
    notes: list[str] = field(default_factory=list)

    #: the longest LLM step so far: the loop stops when less than that is left, so the verdict
    #: still fits the budget
    reserve: float = 0.0

    def out_of_time(self) -> bool:
        return self.clock() + self.reserve >= self.deadline

    def checkpoint(self) -> None:
        if self.out_of_time():
            raise _OutOfBudget

    def timed(self, stage: str, fn: Callable[[], Any], turn: int | None = None) -> Any:
        self.progress(stage, turn)
        t0 = self.clock()
        try:
            return fn()
        finally:
            took = self.clock() - t0
            self.timings[stage] = self.timings.get(stage, 0.0) + took * 1e3
            if stage not in ("lookup", "retrieve"):
                self.reserve = max(self.reserve, took)

    def spent_on(self, exc: Any) -> None:
        """Count an LLM call that ended in ``LLMOutputInvalid`` (its tokens were spent too)."""
        self.calls += 1
        self.tokens["prompt"] += getattr(exc, "prompt_tokens", 0)
        self.tokens["completion"] += getattr(exc, "completion_tokens", 0)

    def spend(self, reply: Any) -> Any:
        self.calls += 1
        self.tokens["prompt"] += reply.prompt_tokens
        self.tokens["completion"] += reply.completion_tokens
        return reply.parsed


class Verifier:
    def __init__(self, *, llm: Any = None, evidence: EvidenceSearch | None = None,
                 lookup: Callable[[MatchRequest], Match] | None = None, pool: FewShotPool | None = None,
                 head: VerdictHead | None = None, clock: Callable[[], float] = time.monotonic,
                 head_weight: float = 0.0) -> None:
        #: the one match path for the lookup (``plugin.service.matching.match_post``, the
        #: verifying tenant's, with the explanations kept: the lookup reads the kNN similarity)
        self.llm, self.evidence, self.lookup = llm, evidence, lookup
        self.pool, self.head, self.clock = pool, head, clock
        #: the blend's weight where the configuration sets none (``plugin.verify.blend``)
        self.head_weight = head_weight

    # -- the entry point ------------------------------------------------------------------------
    def verify(self, req: VerifyRequest, cfg: VerificationConfig,
               progress: Progress | None = None) -> VerificationResult:
        req = req.validated()
        budget = req.budget_s or cfg.budget_s
        start = self.clock()
        run = _Run(deadline=start + budget, clock=self.clock, progress=progress or (lambda s, t: None))
        if req.gold_qa is not None:
            found = self._conclude(req, cfg, list(req.gold_qa), run, stage="gold-evidence",
                                   stopped="gold-evidence")
        else:
            found = self._lookup(req, cfg, run)
            if found is None:
                found = {Strategy.LOOKUP: self._no_lookup_match, Strategy.QA_LOOP: self._qa_loop,
                         Strategy.SINGLE_CALL: self._single_call,
                         Strategy.HEAD: self._head_only, Strategy.CITED: self._cited}[cfg.strategy](req, cfg, run)
        timings = {k: round(v, 1) for k, v in run.timings.items()}
        timings["total"] = round((self.clock() - start) * 1e3, 1)
        return VerificationResult(
            claim=req.claim, date=req.date, config=cfg.name, strategy=cfg.strategy.value, outcome=found,
            timings_ms=timings, tokens=Tokens(prompt=run.tokens["prompt"], completion=run.tokens["completion"],
                                              calls=run.calls),
            budget_s=budget, prompt_versions=prompts.versions(), notes=tuple(run.notes))

    # -- lookup: previously fact-checked --------------------------------------------------------
    def _lookup(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run) -> Outcome | None:
        if not looks_up(cfg) or self.lookup is None:
            return None
        from plugin.search.request import MatchRequest

        lookup = self.lookup
        try:
            result = run.timed("lookup", lambda: lookup(MatchRequest(text=req.claim, lang=req.lang, date=req.date,
                                                                     k=LOOKUP_K)))
        except NotFound as exc:  # no fact-check index in this deployment: verify from evidence
            run.notes.append(f"lookup skipped: {exc.detail}")
            return None
        best = next((c.to_dict() for c in result.candidates if c.fields.get("url") not in req.exclude_urls), None)
        run.lookup = best
        if best is None or not clears(best, cfg):
            return None
        return fact_check_found(best)

    def _no_lookup_match(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run) -> Outcome:
        return no_fact_check(run.lookup, cfg)

    # -- qa-loop ----------------------------------------------------------------------------------
    def _qa_loop(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run) -> Outcome:
        self._need_llm_and_evidence()
        examples = self._examples(req, cfg)
        pairs: list[dict[str, Any]] = []
        asked: set[str] = set()
        stopped = "max-turns"
        for turn in range(1, cfg.max_turns + 1):
            try:
                why = self._turn(req, cfg, run, turn, examples, pairs, asked)
            except _OutOfBudget:
                why = "budget"
            if why:
                stopped = why
                break
        return self._conclude(req, cfg, pairs, run, stage="qa-loop", stopped=stopped, examples=examples)

    def _turn(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run, turn: int,
              examples: list[dict[str, Any]], pairs: list[dict[str, Any]], asked: set[str]) -> str | None:
        """One question → HyDE → retrieve → answer → summary; the budget is checked before every
        step. Appends the answered pair; returns why the loop stops, or ``None`` to go on."""
        day = req.date.isoformat() if req.date else "unknown"
        run.checkpoint()
        q = run.spend(run.timed("question", lambda: self.llm.chat(
            prompts.messages("question", examples=prompts.example_block(examples), claim=req.claim,
                             qa=prompts.qa_lines(pairs)),
            schema=steps.NextQuestion, max_tokens=cfg.max_tokens), turn)).question
        if not q or q.lower() in asked:
            return "no-new-question"
        asked.add(q.lower())
        query = q
        if cfg.hyde:
            run.checkpoint()
            hyde = run.spend(run.timed("hyde", lambda: self.llm.chat(
                prompts.messages("hyde", claim=req.claim, question=q),
                schema=steps.HydePassage, max_tokens=cfg.max_tokens), turn)).passage
            query = f"{q}\n{hyde}"
        run.checkpoint()
        passages = run.timed("retrieve", lambda: self._search(query, req, cfg.passages_per_question), turn)
        pairs.append(self._answer(req, cfg, run, q, passages, turn))
        run.checkpoint()
        summary = run.spend(run.timed("summary", lambda: self.llm.chat(
            prompts.messages("summary", claim=req.claim, date=day, qa=prompts.qa_lines(pairs)),
            schema=steps.EvidenceSummary, max_tokens=cfg.max_tokens), turn))
        run.summary = summary.summary
        return "decisive" if decisive(summary.label_scores.by_label(), cfg.decisive_at) else None

    def _answer(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run, question: str,
                passages: list[dict[str, Any]], turn: int) -> dict[str, Any]:
        if not passages:
            return {"question": question, "answer": NO_ANSWER, "source_url": None, "passage_id": None}
        run.checkpoint()
        got = run.spend(run.timed("answer", lambda: self.llm.chat(
            prompts.messages("answer", claim=req.claim, question=question,
                             passages=prompts.numbered([_passage_line(p) for p in passages])),
            schema=steps.GroundedAnswer, max_tokens=cfg.max_tokens), turn))
        if not 1 <= got.source <= len(passages):
            return {"question": question, "answer": NO_ANSWER, "source_url": None, "passage_id": None}
        src = passages[got.source - 1]
        return {"question": question, "answer": got.answer, "source_url": src.get("url"),
                "passage_id": src.get("id")}

    # -- single-call ------------------------------------------------------------------------------
    def _single_call(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run) -> Outcome:
        self._need_llm_and_evidence()
        examples = self._examples(req, cfg)
        passages = run.timed("retrieve", lambda: self._search(req.claim, req, cfg.passages))
        try:
            out = run.spend(run.timed("single-call", lambda: self.llm.chat(
                prompts.messages("single_call", examples=prompts.example_block(examples),
                                 claim=req.claim, date=req.date.isoformat() if req.date else "unknown",
                                 max_pairs=cfg.max_pairs,
                                 passages=prompts.numbered([_passage_line(p) for p in passages])),
                schema=steps.single_call_schema(cfg.max_pairs), max_tokens=cfg.max_tokens)))
        except LLMOutputInvalid as exc:  # its pairs are lost with it: the passages are the evidence
            run.spent_on(exc)
            return self._fallback(req, passage_pairs(req, passages), run, exc, stage="single-call",
                                  stopped="single-call", retrieved=len(passages))
        pairs = []
        for item in out.qa_pairs:
            src = passages[item.source - 1] if 1 <= item.source <= len(passages) else None
            pairs.append({"question": item.question, "answer": item.answer if src else NO_ANSWER,
                          "source_url": src.get("url") if src else None,
                          "passage_id": src.get("id") if src else None})
        stopped = "budget" if run.out_of_time() else "single-call"
        return self._finish(out, pairs, req, cfg, stage="single-call", stopped=stopped,
                            retrieved=len(passages))

    # -- the verdict --------------------------------------------------------------------------------
    def _conclude(self, req: VerifyRequest, cfg: VerificationConfig, pairs: list[dict[str, Any]],
                  run: _Run, *, stage: str, stopped: str,
                  examples: list[dict[str, Any]] | None = None) -> Outcome:
        if cfg.strategy is Strategy.HEAD:
            return self._head_verdict(req, pairs, run, stage=stage, stopped=stopped)
        self._need_llm()
        if examples is None:
            examples = self._examples(req, cfg)
        try:
            out = run.spend(run.timed("verdict", lambda: self.llm.chat(
                prompts.messages("verdict", examples=prompts.example_block(examples), claim=req.claim,
                                 date=req.date.isoformat() if req.date else "unknown",
                                 qa=prompts.qa_lines(pairs, empty="(no evidence found)")),
                schema=steps.VerdictOut, max_tokens=cfg.max_tokens)))
        except LLMOutputInvalid as exc:
            run.spent_on(exc)
            result = self._fallback(req, pairs, run, exc, stage=stage, stopped=stopped)
        else:
            result = self._finish(out, pairs, req, cfg, stage=stage, stopped=stopped)
        if run.summary:
            result = replace(result, evidence_summary=run.summary)
        return result

    def _finish(self, out: Any, pairs: list[dict[str, Any]], req: VerifyRequest,
                cfg: VerificationConfig, *, stage: str, stopped: str, retrieved: int | None = None) -> Outcome:
        llm_scores = out.label_scores.by_label()
        scores, verdict, source, blend = llm_scores, out.verdict.value, "llm", None
        w = self.head_weight if cfg.head_weight is None else cfg.head_weight
        if self.head is not None and w > 0:
            head = self.head.label_scores(req.claim, pairs, req.date.isoformat() if req.date else None)
            scores = blended(llm_scores, head, w)
            verdict, source = max(steps.LABELS, key=lambda k: scores[k]), "llm+head"
            blend = Blend(llm=llm_scores, head=head, weight=w)
        statements, dropped = cited_statements(out.statements, len(pairs))
        return Outcome(verdict=verdict, label_scores=scores, statements=tuple(statements), qa_pairs=tuple(pairs),
                       citations=citations(pairs, statements), stage=stage, stopped_because=stopped,
                       verdict_source=source, uncited_statements_dropped=dropped, retrieved=retrieved,
                       blend=blend)

    def _fallback(self, req: VerifyRequest, pairs: list[dict[str, Any]], run: _Run,
                  exc: LLMOutputInvalid, *, stage: str, stopped: str, retrieved: int | None = None) -> Outcome:
        """The verdict after the LLM's verdict step gave invalid output twice (malformed, or
        ratings that do not support its verdict): the verdict head's, or Not Enough Evidence
        when there is no head. Never the LLM's unsupported label."""
        reason = f"invalid LLM output after one retry: {exc.detail}"
        if self.head is not None:
            out = self._head_verdict(req, pairs, run, stage=stage, stopped=stopped)
        else:
            reason += "; no verdict head to fall back on (run `factsieve train-verdict`)"
            out = Outcome(verdict=Verdict.NOT_ENOUGH_EVIDENCE.value, label_scores={}, statements=(),
                          qa_pairs=tuple(pairs), citations=citations(pairs, ()), stage=stage,
                          stopped_because=stopped, verdict_source="none")
        return replace(out, fallback_reason=reason, retrieved=retrieved)

    # -- no LLM: the verdict head -------------------------------------------------------------------
    def _head_only(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run) -> Outcome:
        if self.evidence is None:
            raise BadInput("the head configuration needs an evidence index to read passages from")
        passages = run.timed("retrieve", lambda: self._search(req.claim, req, cfg.passages))
        return self._head_verdict(req, passage_pairs(req, passages), run, stage="head",
                                  stopped="passages")

    def _cited(self, req: VerifyRequest, cfg: VerificationConfig, run: _Run) -> Outcome:
        from plugin.verify.cited import verify_cited  # passages, stances, cited justification

        return verify_cited(req, cfg, evidence=self.evidence, head=self.head, timed=run.timed)

    def _head_verdict(self, req: VerifyRequest, pairs: list[dict[str, Any]], run: _Run, *,
                      stage: str, stopped: str) -> Outcome:
        if self.head is None:
            from plugin.errors import ModelUnavailable

            raise ModelUnavailable("no verdict head is available: run `factsieve train-verdict` "
                                   "or choose a configuration that uses the LLM")
        scores = run.timed("head", lambda: self.head.label_scores(
            req.claim, pairs, req.date.isoformat() if req.date else None))
        verdict = max(steps.LABELS, key=lambda k: scores.get(k, 0.0))
        return Outcome(verdict=verdict, label_scores=scores, statements=(), qa_pairs=tuple(pairs),
                       citations=citations(pairs, ()), stage=stage, stopped_because=stopped,
                       verdict_source="head")

    # -- helpers --------------------------------------------------------------------------------------
    def _examples(self, req: VerifyRequest, cfg: VerificationConfig) -> list[dict[str, Any]]:
        if self.pool is None or cfg.fewshot == 0:
            return []
        return self.pool.select(req.claim, cfg.fewshot,
                                exclude=frozenset({req.claim_id}) if req.claim_id else frozenset())

    def _search(self, text: str, req: VerifyRequest, k: int) -> list[dict[str, Any]]:
        """Evidence for ``text``: published before the claim date, never an excluded page."""
        assert self.evidence is not None
        return self.evidence.search(EvidenceQuery(
            text=text[:MAX_TEXT_CHARS], before=req.date, exclude_urls=req.exclude_urls,
            exclude_domains=req.exclude_domains, k=k)).passages

    def _need_llm(self) -> None:
        if self.llm is None:
            from plugin.errors import LLMNotConfigured

            raise LLMNotConfigured("this verification configuration needs an LLM: set "
                                   "FACTSIEVE_LLM_URL (and FACTSIEVE_LLM_MODEL)")

    def _need_llm_and_evidence(self) -> None:
        self._need_llm()
        if self.evidence is None:
            raise BadInput("this verification configuration needs the evidence index: "
                           "load documents with `factsieve ingest-evidence`")


def decisive(scores: dict[str, float], at: float) -> bool:
    """Whether the evidence so far decides the claim: its summary rates Supported, Refuted or
    Conflicting at ``at`` or more. A lean towards Not Enough Evidence never stops the search."""
    return max(v for k, v in scores.items() if k != Verdict.NOT_ENOUGH_EVIDENCE.value) >= at


def passage_pairs(req: VerifyRequest, passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Retrieved passages as the evidence pairs the head reads: each passage answers its title
    (the claim when it has none)."""
    return [{"question": p.get("title") or req.claim, "answer": p.get("text") or "",
             "source_url": p.get("url"), "passage_id": p.get("id")} for p in passages]


def _passage_line(p: dict[str, Any]) -> str:
    when = f" ({p['published_at']})" if p.get("published_at") else ""
    title = f"{p['title']}{when}: " if p.get("title") else ""
    return f"{title}{' '.join(str(p.get('text') or '').split())[:700]}"
