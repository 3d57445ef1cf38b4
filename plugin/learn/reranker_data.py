"""What a tenant's decisions teach the reranker: one ranking group per decided post (pure, but
for ``fetch_passages``).

A cross-encoder learns to put the right fact-check above the others shown with it (listwise,
as ``train-reranker lora`` trained the packaged one). From the decision log (``plugin.review``):

- **Which decisions.** Those the recalibration learns from (``calibrate.teaching``): not
  undone, not an undo, not origin ``auto`` (the model's own guesses) nor ``tipline`` (the
  public's word, which names no one fact-check as the answer), not ``not_a_claim``.
- **Positive.** The fact-check of the post's confirm or manual match in force (the newest one).
  A post without one (only rejects, "none of these") ranks nothing and makes no group.
- **Hard negatives.** Every other candidate shown with the post (the reviewer passed them over)
  and every fact-check a reject of the post named, best-ranked first.
- **Held out.** The recalibration's share of posts (``calibrate.held_out``, a hash of the post
  id): never trained on, scored by the champion/challenger gate (``reranker_gate``).

Texts are fetched once by id from the fact-check index (``fetch_passages``: one mget) and read as
the matcher hands them to a reranker (``rerank.passage``; the post ``normalize_post``-ed).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from plugin.learn.calibrate import held_out, teaching
from plugin.review.model import Action
from plugin.review.records import Decision

if TYPE_CHECKING:
    from plugin.index.store import Store


@dataclass(frozen=True)
class DecisionGroup:
    """One decided post: its text, language, the right fact-check and the wrong ones shown."""

    post_id: str
    lang: str
    text: str
    positive: str
    negatives: tuple[str, ...]

    @property
    def held_out(self) -> bool:
        return held_out(self.post_id)


def decision_groups(decisions: Iterable[Decision]) -> list[DecisionGroup]:
    """The tenant's decision log as ranking groups (module docstring), in post-id order. A group
    needs a positive and at least one negative (nothing to rank otherwise)."""
    kept, _claimless, _left = teaching(decisions)
    by_post: dict[str, list[Decision]] = {}
    for d in sorted(kept, key=lambda d: d.at or ""):
        by_post.setdefault(d.post_id, []).append(d)
    groups = []
    for post_id in sorted(by_post):
        ds = by_post[post_id]
        positives = [(d, fc) for d in ds
                     if d.action in (Action.CONFIRM, Action.MANUAL) and (fc := d.factcheck_id)]
        if not positives:
            continue
        last, positive = positives[-1]
        shown = sorted(last.candidates or (), key=lambda c: c.rank or 10**6)
        negatives = [c.factcheck_id for c in shown]
        negatives += [fc for d in ds if d.action is Action.REJECT and (fc := d.factcheck_id)]
        unique = tuple(dict.fromkeys(n for n in negatives if n != positive))
        if unique and last.post_text:
            groups.append(DecisionGroup(post_id, last.post_lang or "", last.post_text, positive, unique))
    return groups


def split(groups: Iterable[DecisionGroup]) -> tuple[list[DecisionGroup], list[DecisionGroup]]:
    """``(trained on, held out)`` by the recalibration's rule."""
    groups = list(groups)
    return [g for g in groups if not g.held_out], [g for g in groups if g.held_out]


def factcheck_ids(groups: Iterable[DecisionGroup]) -> list[str]:
    """Every fact-check the groups name, once, sorted."""
    return sorted({f for g in groups for f in (g.positive, *g.negatives)})


def fetch_passages(store: Store, index: str, ids: list[str]) -> dict[str, str]:
    """``{id: reranker passage}`` of the fact-checks that still exist (one mget); a deleted
    fact-check is left out, and so are the groups that need it (``with_texts``)."""
    from plugin.search.rerank import passage

    found = store.mget(index, ids, source=["title", "claim"])
    return {i: passage(hit.get("_source")) for i, hit in found.items()}


def with_texts(groups: Iterable[DecisionGroup], passages: Mapping[str, str]) -> list[DecisionGroup]:
    """The groups whose positive still exists, without the negatives that no longer do."""
    out = []
    for g in groups:
        negatives = tuple(n for n in g.negatives if n in passages)
        if g.positive in passages and negatives:
            out.append(DecisionGroup(g.post_id, g.lang, g.text, g.positive, negatives))
    return out
