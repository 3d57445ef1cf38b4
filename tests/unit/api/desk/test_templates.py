"""The desk's templates escape everything a post, a fact-check or a note brings (rendered
without services: the templates are pure given their data)."""
from __future__ import annotations

import pytest
from flask import Flask, render_template

from api.desk import desk
from api.desk import present as p
from api.desk.sessions import DeskSession
from plugin.service.keys import Scope

SCRIPT = '<script>alert("x")</script>'


def item(**over):
    base = {"post_id": 'p-<b>1</b>"', "text": SCRIPT, "lang": "en", "date": "2026-11-01",
            "source_url": "javascript:alert(1)", "status": "pending", "version": "3:1",
            "decided_by": None, "decided_at": None,
            "candidates": [{"factcheck_id": 'fc-"1"', "claim": "<img src=x onerror=alert(1)>",
                            "rating": "<b>False</b>", "publisher": "Pub", "date": "2026-10-01",
                            "url": "https://checks.example.org/a", "lang": "en", "rank": 1,
                            "score": 1.0, "confidence": 0.91,
                            "signals": {"bm25_rank": 1, "knn_similarity": 0.8, "reranked": True,
                                        "rerank_score": 2.0}}]}
    return {**base, **over}


@pytest.fixture
def render():
    app = Flask(__name__)
    app.register_blueprint(desk)

    def go(template: str, scope: Scope = Scope.WRITE, **ctx) -> str:
        session = DeskSession(token="t", key_id="key_1", name="<i>Ana</i>", tenant="t1", scope=scope,
                              csrf="csrf-token", created_at="now")
        with app.test_request_context("/desk/"):
            from flask import g
            g.desk = session
            return render_template(template, here="/desk/", **ctx)
    return go


def test_item_escapes_post_claim_rating_and_ids(render):
    html = render("_item.html", item=item())
    assert "<script>" not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>" not in html
    assert 'href="javascript:' not in html  # shown as text, never a link
    assert 'value="confirm:fc-&#34;1&#34;"' in html
    assert 'name="csrf_token" value="csrf-token"' in html
    assert 'data-key="1"' in html and "BM25 rank 1 · kNN similarity 0.80 · reranked (score 2.00)" in html
    assert f'id="{p.dom_id(item()["post_id"])}"' in html
    assert 'Confidence 0.91 <span class="bar" aria-hidden="true"><span class="fill w18 high">' in html
    # the post, its version and the way back travel in the form's action, not in hidden fields
    assert 'action="/desk/decide?post_id=p-%3Cb%3E1%3C/b%3E%22&amp;version=3:1&amp;back=/desk/"' in html
    assert html.count('type="hidden"') == 1
    assert "textarea" not in html and "Add a note" in html and "Match by hand" in html


def test_read_keys_get_no_buttons(render):
    html = render("_item.html", item=item(), scope=Scope.READ)
    assert 'name="choice"' not in html and 'form="bulk"' not in html


def test_decided_item_offers_undo_and_names_who(render):
    html = render("_item.html", item=item(status="confirmed", decided_by="<u>Bo</u>", decided_at="2026-11-27T10:00:00Z"))
    assert 'value="undo"' in html and 'value="reject"' not in html
    assert "&lt;u&gt;Bo&lt;/u&gt;" in html


def test_search_results_escape(render):
    html = render("_search.html", results=[{"factcheck_id": "fc-2", "claim": SCRIPT, "url": "javascript:x"}],
                  q=SCRIPT, post_id="p1", version="1:1")
    assert "<script>" not in html and 'value="manual:fc-2"' in html and "javascript:" not in html


def test_conflict_message_is_an_alert(render):
    html = render("_item.html", item=item(), conflict="<b>Bo</b> already decided this item")
    assert 'role="alert">&lt;b&gt;Bo&lt;/b&gt; already decided' in html


def test_the_items_own_page_has_the_note_field_and_notes_are_escaped(render):
    last = {"id": "dec_1", "action": "none", "note": "<b>seen</b> on Telegram"}
    html = render("_item.html", item=item(), with_note=True)
    assert 'name="note"' in html and 'maxlength="2000"' in html and "Add a note" not in html
    html = render("_item.html", item=item(status="no_match", last_decision=last))
    assert "Note: &lt;b&gt;seen&lt;/b&gt; on Telegram" in html


def test_fresh_says_how_many_and_keeps_polling(render):
    html = render("_fresh.html", new=3, poll_url="/desk/fresh?since=x", state={"lang": "en"})
    assert "3 new posts since this page was drawn" in html and 'href="/desk/?lang=en"' in html
    assert 'hx-get="/desk/fresh?since=x"' in html and 'hx-trigger="every 30s"' in html
    assert "new post" not in render("_fresh.html", new=0, poll_url="/desk/fresh", state={})


def test_an_item_without_candidates_offers_none_not_a_claim_and_a_manual_match(render):
    html = render("_item.html", item=item(candidates=[], confidence=None))
    assert "No candidates were found for this post." in html
    assert 'value="reject"' not in html and 'value="none"' in html and 'value="not_a_claim"' in html
    assert "Match by hand" in html
    assert '&amp;top="' in html  # its bulk checkbox names no top candidate (bulk confirm skips it)


def test_an_image_post_shows_its_thumbnail_from_the_desk_and_the_text_read_escaped(render):
    read = '<img src=x onerror=alert(2)> 5G MASTS'
    html = render("_item.html", item=item(text=f"see this\n{read}", image={
        "sha256": "ab" * 32, "width": 1200, "height": 800, "ocr_text": read,
        "thumbnail": {"width": 320, "height": 213}}))
    imgs = [line for line in html.splitlines() if "<img" in line]
    assert len(imgs) == 1 and 'src="/desk/images/p-%3Cb%3E1%3C/b%3E%22"' in imgs[0]
    assert 'width="320" height="213"' in imgs[0] and "onerror" not in imgs[0]
    assert "&lt;img src=x onerror=alert(2)&gt; 5G MASTS" in html  # the text read, as text
    assert '<blockquote class="post-text" lang="en">see this</blockquote>' in html  # the caption alone


def test_an_image_post_without_a_thumbnail_shows_its_text_only(render):
    html = render("_item.html", item=item(image={"sha256": "ab" * 32, "width": 1, "height": 1,
                                                   "ocr_text": "", "thumbnail": None}))
    assert "/desk/images/" not in html


def test_far_less_likely_candidates_are_folded_under_n_more(render):
    base = item()["candidates"][0]
    cands = [{**base, "factcheck_id": f"fc{i}", "claim": f"claim {i}", "confidence": c}
             for i, c in enumerate((0.93, 0.41, 0.05, 0.01), start=1)]
    html = render("_item.html", item=item(candidates=cands), fold_ratio=0.2)
    shown, folded = html.split('<details class="more">')
    assert "claim 1" in shown and "claim 2" in shown and "claim 3" not in shown
    assert "2 more, far less likely" in folded and "claim 3" in folded and "claim 4" in folded
    assert '<ol class="candidates" start="3"' in folded and 'data-key="3"' in folded  # numbered on
    assert "<details" not in render("_item.html", item=item(candidates=cands), fold_ratio=0.0)
