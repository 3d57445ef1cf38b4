"""The claim queue's order (pure), and the check-worthiness head."""
from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from plugin.claims.checkworthy import CheckWorthiness
from plugin.claims.priority import priority, ranked, terms, weights
from plugin.claims.records import Claim, FactCheckRef, Lead
from plugin.errors import ModelMismatch

TODAY = date(2026, 11, 28)


def claim(cid: str, today: int = 0, yesterday: int = 0, worth: float | None = None,
          fc: FactCheckRef | None = None, last: str = "2026-11-28T10:00:00") -> Claim:
    return Claim(id=cid, tenant="t", lead=Lead("p", "x", "en", last), post_count=today + yesterday + 1,
                 first_seen=last, last_seen=last, days={"2026-11-28": today, "2026-11-27": yesterday},
                 check_worthiness=worth, fact_check=fc)


def test_spreading_growing_and_check_worthy_claims_come_first():
    viral = claim("viral", today=300, yesterday=20, worth=0.9)
    old = claim("old", today=2, yesterday=40, worth=0.9)
    chatter = claim("chatter", today=300, yesterday=20, worth=0.05)
    assert [c.id for c, _ in ranked([old, chatter, viral], TODAY)] == ["viral", "chatter", "old"]
    assert terms(viral, TODAY, 0.9)["growth"] == 2.0  # clipped


def test_an_answered_claim_needs_no_one():
    open_ = claim("open", today=10, worth=0.8)
    answered = replace(open_, id="answered", fact_check=FactCheckRef("f", "c", 1.0, confirmed=True))
    likely = replace(open_, id="likely", fact_check=FactCheckRef("f", "c", 0.95))
    unsure = replace(open_, id="unsure", fact_check=FactCheckRef("f", "c", 0.4))
    order = [c.id for c, _ in ranked([answered, likely, unsure, open_], TODAY)]
    assert order[-1] == "answered" and order.index("likely") > order.index("unsure")
    assert priority(unsure, TODAY) == priority(open_, TODAY)


def test_the_weights_are_the_data_file():
    w = weights()
    assert w.answered < 0 < w.spread and w.max_claims > 0


def test_the_head_scores_a_vector_of_its_size_only():
    head = CheckWorthiness((1.0, -1.0), 0.0, 0.5, "m", {"name": "h"})
    assert head.score([2.0, 0.0]) > 0.5 > head.score([0.0, 2.0])
    assert CheckWorthiness.from_file(head.to_file()) == head
    with pytest.raises(ModelMismatch):
        head.score([1.0, 2.0, 3.0])
