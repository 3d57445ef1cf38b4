"""A claim's counts, lead and fact-check as posts join (pure), and its edges."""
from __future__ import annotations

from datetime import date

from plugin.claims.records import (RECENT_POSTS, Claim, ClaimPost, FactCheckRef, add_post, better_answer,
                                   new_claim)


def post(pid: str, at: str, lang: str = "en", answer: str | None = None, conf: float | None = None) -> ClaimPost:
    return ClaimPost(pid, f"text {pid}", lang, at, answer, f"claim of {answer}" if answer else None, conf)


def grown(*posts: ClaimPost) -> Claim:
    claim = new_claim("c1", "t", posts[0], "now")
    for p in posts:
        claim = add_post(claim, p, "now")
    return claim


def test_counts_languages_days_and_span():
    claim = grown(post("a", "2026-11-20T10:00:00"), post("b", "2026-11-21T09:00:00", "es"),
                  post("c", "2026-11-19T08:00:00", "es"))
    assert claim.post_count == 3
    assert dict(claim.langs) == {"en": 1, "es": 2}
    assert dict(claim.days) == {"2026-11-20": 1, "2026-11-21": 1, "2026-11-19": 1}
    assert (claim.first_seen, claim.last_seen) == ("2026-11-19T08:00:00", "2026-11-21T09:00:00")


def test_a_post_added_again_counts_once():
    p = post("a", "2026-11-20T10:00:00")
    claim = grown(p)
    assert add_post(claim, p, "later") is claim
    assert grown(p, p).post_count == 1


def test_recent_posts_are_bounded():
    claim = grown(*[post(str(i), "2026-11-20T10:00:00") for i in range(RECENT_POSTS + 5)])
    assert len(claim.recent_posts) == RECENT_POSTS and claim.post_count == RECENT_POSTS + 5


def test_lead_moves_to_the_more_confident_post_and_fact_check_to_the_best_answer():
    claim = grown(post("a", "2026-11-20T10:00:00", answer="f1", conf=0.4),
                  post("b", "2026-11-20T11:00:00", answer="f2", conf=0.9),
                  post("c", "2026-11-20T12:00:00", answer="f1", conf=0.5))
    assert claim.lead.post_id == "b"
    assert claim.fact_check == FactCheckRef("f2", "claim of f2", 0.9)


def test_a_confirmed_fact_check_stays():
    confirmed = FactCheckRef("f9", "x", 0.2, confirmed=True)
    assert better_answer(confirmed, post("z", "2026-11-20", answer="f1", conf=0.99)) is confirmed
    assert better_answer(None, post("z", "2026-11-20")) is None


def test_source_round_trip_and_api_shape():
    claim = grown(post("a", "2026-11-20T10:00:00", answer="f1", conf=0.7), post("b", "2026-11-21T09:00:00", "es"))
    assert Claim.from_source(claim.to_source()) == claim
    out = claim.to_dict(today=date(2026, 11, 21))
    assert "recent_posts" not in out and out["langs"] == {"en": 1, "es": 1}
    assert len(out["sparkline"]) == 14 and out["sparkline"][-1] == {"day": "2026-11-21", "posts": 1}
    assert out["sparkline"][-2] == {"day": "2026-11-20", "posts": 1}


def test_an_update_reads_every_stored_field_and_the_mapping_has_each():
    """A claim is read for an update with ``CLAIM_FIELDS`` and written back whole: a stored field
    missing there is erased by the next update (``trending_by`` was), and one missing from the
    strict mapping is refused."""
    import json
    from pathlib import Path

    from plugin.claims.store import CLAIM_FIELDS

    stored = set(grown(post("a", "2026-11-20T10:00:00")).to_source())
    assert stored - {"lang_list"} == set(CLAIM_FIELDS)  # lang_list is derived from langs
    template = json.loads((Path(__file__).parents[3] / "index_templates" / "claims.index_template.json").read_text())
    assert stored <= set(template["template"]["mappings"]["properties"])


def test_a_split_reads_every_stored_field_of_the_post():
    """A split rewrites the post's document from what it read (the embedding made again): every
    other field of the posts mapping is read, or the split erases it (``check_worthiness`` was)."""
    import json
    from pathlib import Path

    from plugin.claims.queries import SPLIT_FIELDS

    template = json.loads((Path(__file__).parents[3] / "index_templates" / "posts.index_template.json").read_text())
    assert set(SPLIT_FIELDS) == set(template["template"]["mappings"]["properties"]) - {"embedding"}
