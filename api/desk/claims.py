"""The desk's claims: the queue of claims by priority, one claim with its posts, one decision for
the claim, and "not the same claim" (a split) on any of its posts. Same sessions, CSRF and
answers as the item views (``api.desk.views``); the work is ``plugin.service.claiming`` and
``ClaimStore``, as the API's claims routes do it, with the reviewer's key name as the actor and
``origin="desk"``.
"""
from __future__ import annotations

from flask import Response, make_response, redirect, render_template, request, url_for

from api.desk import present as p
from api.desk.views import ORIGIN, after_write, conflict_message, desk, field, form, local_next, may_decide, \
    services, session, sessions
from plugin.claims.queries import MAX_LIMIT, PRIORITY
from plugin.errors import Conflict, FactSieveError, NotFound

#: the sparkline's glyphs, lowest to highest (text: no inline style, which the CSP forbids)
BARS = "▁▂▃▄▅▆▇█"


def sparkline(days: list[dict[str, int]]) -> str:
    """The posts per day as a row of block glyphs (pure)."""
    top = max((d["posts"] for d in days), default=0)
    if not top:
        return BARS[0] * len(days)
    return "".join(BARS[0] if not d["posts"] else BARS[max(1, round(d["posts"] / top * (len(BARS) - 1)))]
                   for d in days)


@desk.get("/claims")
def claims_queue() -> Response:
    sort = request.args.get("sort") or PRIORITY
    if sort not in (PRIORITY, "newest", "posts", "first_seen"):
        sort = PRIORITY
    page = services().claims.page(session().tenant, sort=sort, status=None if sort == PRIORITY else "open",
                                  cursor=request.args.get("cursor") or None, limit=50)
    flash = sessions().pop_flash(session().token)
    nxt = url_for("desk.claims_queue", sort=sort, cursor=page["next"]) if page.get("next") else None
    return make_response(render_template("claims.html", claims=page["claims"], total=page["total"], sort=sort,
                                         next_url=nxt, flash=flash, spark=sparkline))


@desk.get("/claims/<path:claim_id>")
def claim_page(claim_id: str) -> Response:
    tenant, sv = session().tenant, services()
    claim = sv.claims.get(tenant, claim_id)
    posts = sv.claims.posts(tenant, claim_id, cursor=request.args.get("cursor") or None, limit=MAX_LIMIT)
    lead = None
    try:
        lead = sv.review.item(tenant, claim.lead.post_id).to_dict()
    except NotFound:
        pass
    events = [e.to_dict() for e in sv.claims.events(tenant, claim_id)]
    flash = sessions().pop_flash(session().token)
    return make_response(render_template(
        "claim.html", claim=claim.to_dict(), posts=posts["posts"], posts_total=posts["total"], lead=lead,
        events=events, flash=flash, spark=sparkline, here=request.full_path.rstrip("?"),
        next_url=url_for("desk.claim_page", claim_id=claim_id, cursor=posts["next"]) if posts.get("next") else None))


@desk.post("/claims/decide")
def claim_decide() -> Response:
    """One decision for the claim (``claiming.decide_claim``); back to the page with what it did."""
    from plugin.service.claiming import decide_claim

    may_decide()
    back = local_next(field("back"))
    action, factcheck_id = p.parse_choice(form().get("choice"))
    sv = services()
    try:
        done = decide_claim(sv.claims, sv.review, sv.posts, session().tenant, session().name, field("claim_id"),
                            action, factcheck_id, form().get("note") or None, origin=ORIGIN,
                            bulk=sv.settings.review_bulk_max)
        message = (f"Claim decided ({action}): {len(done['decisions'])} post(s) decided, "
                   f"{len(done['skipped'])} left as they were.")
    except Conflict as exc:
        message = conflict_message(exc)
    after_write("the flash message", sessions().flash, session().token, message)
    return redirect(back, 303)


@desk.post("/claims/split")
def claim_split() -> Response:
    """"Not the same claim": the post leaves the claim for one of its own."""
    may_decide()
    back = local_next(field("back"))
    try:
        done = services().claims.split(session().tenant, field("claim_id"), field("post_id"), actor=session().name,
                                       origin=ORIGIN)
        message = f"Post {p.short(field('post_id'), 40)} is now claim {done['new_claim'].id} of its own."
    except (Conflict, NotFound) as exc:
        message = f"Not split: {exc.detail}"
    except FactSieveError:
        raise
    after_write("the flash message", sessions().flash, session().token, message)
    return redirect(back, 303)
