"""Whether, and how far, a match is reranked (pure): the request's wish, the configuration's
rerank stage and a loaded reranker, the reranker's measured language gate (or the languages it
was trained on), and the live budget against the measured cost of a pair. ``RerankGate`` is the
one place that decides it; ``plugin.search.matcher`` asks it before every rerank."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from plugin.models import Fused
from plugin.search.rerank import GATE_KEY, Reranker, UnavailableReranker  # noqa: F401 (GATE_KEY: re-exported)
from plugin.search.retrieval import RetrievalConfig


#: reranking fewer pairs than this cannot change an order worth reporting
MIN_RERANK_PAIRS = 2
#: pairs a reranker is tried on before its cost is known
PROBE_PAIRS = 2
#: live matches in a row without a pair in the budget after which the measured cost is forgotten
#: and the next match probes again
REPROBE_AFTER = 20
#: how much of a new measurement of a pair's cost the moving average takes in
PAIR_COST_ALPHA = 0.3
FUSED_ORDER = "the matches are in fused (first-stage) order"


def outside_languages(languages: Any, post_lang: str | None, head: list[Fused]) -> str | None:
    """Why a reranker trained on ``languages`` must not reorder this head (pure): the post, or a
    candidate in it, is in a language the reranker never saw, or the post's language is unknown.
    ``None`` (no restriction known) or a head within them: ``None``, rerank.

    A cross-encoder fine-tuned on English tweets alone reorders other languages worse than the
    first stage does (the measurement: the Configurations page of the docs, "Languages")."""
    if not languages:
        return None
    allowed = sorted(languages)
    if post_lang not in languages:
        return (f"the reranker was trained on {', '.join(allowed)} posts only, and this post is "
                f"{post_lang or 'in an unknown language'}: {FUSED_ORDER}")
    others = sorted({lang for f in head if (lang := (f.source or {}).get("lang")) and lang not in languages})
    if others:
        return (f"the reranker was trained on {', '.join(allowed)} fact-checks only, and the "
                f"candidates include {', '.join(others)}: {FUSED_ORDER}")
    return None


#: the gate table's row for post languages it has no row of their own for
OTHER_LANGUAGES = "*"


def head_kind(post_lang: str | None, head: list[Fused]) -> str:
    """``"cross"`` when the head's first candidate is in another language than the post (the
    first stage's best answer crosses languages), else ``"own"`` (pure). Candidates below the
    first may be in any language either way: the reranker was trained with negatives in every
    language, never with an answer in another one."""
    return kind_of_first(post_lang, (head[0].source or {}).get("lang") if head else None)


def kind_of_first(post_lang: str | None, first_lang: str | None) -> str:
    """The head kind from its first candidate's language (``None``: not known, so not crossing)."""
    return "cross" if first_lang and first_lang != post_lang else "own"


#: how each head kind reads in a note
KIND_WORDS = {"own": "a first candidate in their own language", "cross": "a first candidate in another language"}


#: the gate table's key of the rule for ``cross`` heads (``cross_promotion``)
CROSS_RULE = "cross_rule"


def cross_promotion(gate: Mapping[str, Any] | None, post_lang: str | None, head: list[Fused]) -> float | None:
    """The cross-encoder probability from which a ``cross`` head's candidates in the post's
    language move above the others (``rerank.promote_sure``), or ``None`` (pure): only for a
    ``cross`` head, when the table has a ``CROSS_RULE`` and reranks the post language's ``own``
    heads (the reranker is trusted in that language). The probability is measured as the one from
    which the reranker's candidates in the post's language are right often enough, never on
    crosslingual answers (none of the tuning data has them at scale): a first candidate in
    another language loses its place only to a fact-check the reranker is sure of."""
    rule = (gate or {}).get(CROSS_RULE)
    if not isinstance(rule, Mapping) or head_kind(post_lang, head) != "cross":
        return None
    own = row_of(gate or {}, post_lang, "own")
    if not isinstance(own, Mapping) or not own.get("rerank") or rule.get("min_probability") is None:
        return None
    return float(rule["min_probability"])


def row_of(gate: Mapping[str, Any], post_lang: str | None, kind: str) -> Any:
    """The table's row for a post language and head kind: the language's own, else the pooled
    ``OTHER_LANGUAGES`` row's (``None`` when neither has one)."""
    rows = gate.get("rows") or {}
    return (rows.get(post_lang or "") or rows.get(OTHER_LANGUAGES) or {}).get(kind)


def measured_gate(gate: Mapping[str, Any], post_lang: str | None, head: list[Fused]) -> str | None:
    """Why a reranker with a measured ``gate`` must not reorder this head, or ``None`` (pure).

    The table (``plugin.lab.reranker.gate`` measures it, the manifest carries it) has a row per
    post language and head kind (``head_kind``): whether reranking beat the first stage's order
    on held-out posts of that kind. Languages without a row of their own take the
    ``OTHER_LANGUAGES`` row (the languages measured too thinly to stand alone, pooled); a head
    with no row at all keeps the fused order, and says so."""
    kind = head_kind(post_lang, head)
    if cross_promotion(gate, post_lang, head) is not None:
        return None
    what = f"{post_lang or 'unknown-language'} posts with {KIND_WORDS[kind]}"
    row = row_of(gate, post_lang, kind)
    if not isinstance(row, Mapping):
        return f"the reranker was not measured on {what}: {FUSED_ORDER}"
    if not row.get("rerank"):
        return (f"the reranker did not beat the first stage on {what} (MAP@5 {row.get('first_stage')} "
                f"→ {row.get('reranked')} over {row.get('n')} held-out posts): {FUSED_ORDER}")
    return None


def refusal(reranker: Any, post_lang: str | None, head: list[Fused]) -> str | None:
    """Why ``reranker`` must not reorder this head: its measured gate when it has one, else the
    languages it was trained on (``outside_languages``); ``None``: rerank."""
    gate = getattr(reranker, "gate", None)
    if gate:
        return measured_gate(gate, post_lang, head)
    return outside_languages(getattr(reranker, "languages", None), post_lang, head)


#: what the warm-up scores: a post and passages of a typical length (CLEF-2020 tweets and
#: Snopes claims with their titles are ~200 and ~150 characters)
_WARM_POST = " ".join(["claims"] * 30)
_WARM_PASSAGE = " ".join(["checked"] * 20)


def measure_pair_ms(reranker: Reranker, top: int, clock: Callable[[], float]) -> float:
    """What one pair of a ``top``-pair batch costs this reranker here, in ms: the second of two
    batches of typical length (the first pays the runtime's start-up). The matcher measures it
    before its first budgeted match, so that match reranks what the budget fits rather than a
    probe's few pairs; every reranked match refines it (``RerankGate.measured``)."""
    n = max(top, 1)
    reranker.score(_WARM_POST, [_WARM_PASSAGE] * n)
    t0 = clock()
    reranker.score(_WARM_POST, [_WARM_PASSAGE] * n)
    return (clock() - t0) * 1e3 / n


def sure_enough(skip_at: float | None, sure: float | None) -> str | None:
    """Why a match keeps its fused order because the first stage is sure of its first candidate
    (pure): its confidence is at least ``skip_at``. ``None``: no reason here (no threshold, no
    confidence, or not sure enough)."""
    if skip_at is None or sure is None or sure < skip_at:
        return None
    return (f"the first stage is sure of its first match (confidence {sure:.3f}, at least {skip_at:g}), "
            f"where reranking was measured to change next to nothing: {FUSED_ORDER}")


def pairs_within(budget_ms: float | None, pair_ms: float | None, top: int) -> int:
    """How many of the fused head to rerank: all ``top`` without a budget; ``PROBE_PAIRS`` while
    the cost of a pair is not measured yet; else as many as fit the budget (pure)."""
    if budget_ms is None:
        return top
    if pair_ms is None:
        return min(top, PROBE_PAIRS)
    return min(top, int(budget_ms // max(pair_ms, 1e-6)))


class RerankDecision(NamedTuple):
    #: how many of the fused head to rerank (0: keep the fused order)
    pairs: int
    #: what the result says about it, if anything
    note: str | None
    #: the gate for the next match
    gate: RerankGate
    #: a ``cross`` head: the probability from which candidates in the post's language move above
    #: the others, which keep their fused order (``rerank.promote_sure``); ``None``: ``reorder``
    promote_at: float | None = None


@dataclass(frozen=True)
class RerankGate:
    """Decides whether, and how far, a match is reranked (pure): the request's wish, the
    configuration's rerank stage and a loaded reranker, the reranker's languages, and the live
    budget against the measured cost of a pair. It holds that cost and how many budget-starved
    matches ran in a row: a cost measured during a stall would otherwise turn reranking off for
    good (nothing reranked, nothing measured again), so after ``REPROBE_AFTER`` it is forgotten."""

    pair_ms: float | None = None
    starved: int = 0

    def decide(self, config: RetrievalConfig, reranker: Any, *, asked: bool | None,
               lang: str | None, fused: list[Fused], budget_ms: float | None,
               sure: float | None = None) -> RerankDecision:
        """``sure``: the first stage's confidence in its first candidate, for the configuration's
        ``skip_at``."""
        stage = config.rerank
        if asked is False:
            return RerankDecision(0, None, self)
        if stage is not None and isinstance(reranker, UnavailableReranker):
            # configured but broken: its error, whether or not the request asked for reranking
            return RerankDecision(0, f"the reranker {reranker.name!r} failed to load "
                                     f"({reranker.reason}): {FUSED_ORDER}", self)
        if stage is None or reranker is None:
            note = (f"no reranker is configured for configuration {config.name!r}: {FUSED_ORDER}"
                    if asked is True else None)
            return RerankDecision(0, note, self)
        outside = refusal(reranker, lang, fused[:stage.top])
        if outside is not None:
            return RerankDecision(0, outside, self)
        skipped = sure_enough(stage.skip_at, sure)
        if skipped is not None:
            return RerankDecision(0, skipped, self)
        pairs = pairs_within(budget_ms, self.pair_ms, stage.top)
        if budget_ms is not None and pairs < MIN_RERANK_PAIRS:
            note = (f"the rerank budget of {budget_ms:g} ms fits fewer than {MIN_RERANK_PAIRS} pairs "
                    f"(~{self.pair_ms:.0f} ms a pair measured): {FUSED_ORDER}")
            starved = self.starved + 1
            return RerankDecision(0, note, RerankGate() if starved >= REPROBE_AFTER
                                  else replace(self, starved=starved))
        note = (f"reranked the top {pairs} of {stage.top} within the {budget_ms:g} ms budget"
                if pairs < min(stage.top, len(fused)) else None)
        at = cross_promotion(getattr(reranker, "gate", None), lang, fused[:stage.top])
        if at is not None:
            note = "; ".join(n for n in (note, f"the first candidate is in another language: only fact-checks in "
                                              f"{lang} the reranker gives at least {at:g} moved above it") if n)
        return RerankDecision(pairs, note, replace(self, starved=0), at)

    def measured(self, per_pair_ms: float) -> RerankGate:
        """This gate with a new measurement of one pair's cost in its moving average."""
        old = self.pair_ms
        cost = per_pair_ms if old is None else (1 - PAIR_COST_ALPHA) * old + PAIR_COST_ALPHA * per_pair_ms
        return replace(self, pair_ms=cost)
