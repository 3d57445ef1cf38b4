"""The desk's routes: sign-in and sign-out, the queue, one item with its decision log, decisions
one at a time and in bulk, and the manual search. htmx requests (``HX-Request``) get the piece
of page they replace; plain form posts (no JavaScript) get a redirect back, so the page works
without scripts too. Errors are pages (or pieces of page), never JSON, except to clients that
do not take HTML, which get the API's problem+json.
"""
from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from flask import (
    Blueprint,
    Response,
    current_app,
    g,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.datastructures import MultiDict

from api.bodies import read_form
from api.desk import present as p
from api.desk.sessions import (
    COOKIE,
    SIGNIN_COOKIE,
    SIGNIN_TTL_S,
    DeskSession,
    SessionStore,
    SignInTokens,
    csrf_ok,
    same_origin,
)
from api.problems import problem_response, public_problem
from plugin.errors import Conflict, FactSieveError, Forbidden, Unauthorized
from plugin.service.keys import client_address
from plugin.service.services import Services
from plugin.settings import Settings

log = logging.getLogger("factsieve.desk")
desk = Blueprint("desk", __name__, url_prefix="/desk", template_folder="templates",
                 static_folder="static")

#: Content-Security-Policy of every desk answer: scripts and styles only from the desk's own
#: static files (no inline script, no eval), nothing framed, forms post only here.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
ORIGIN = "desk"
#: requests a page makes by itself: they do not keep an idle session alive
POLLS = ("desk.fresh",)


def services() -> Services:
    return current_app.extensions["factsieve"]  # type: ignore[no-any-return]


def sessions() -> SessionStore:
    svc = services()
    return SessionStore(svc.kv, svc.settings.desk_session_ttl_s)


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def form() -> MultiDict[str, str]:
    """The POSTed form, read once through ``api.bodies`` (its size limit applies)."""
    if "desk_form" not in g:
        g.desk_form = read_form(services().settings.max_json_bytes, "FACTSIEVE_MAX_JSON_BYTES")
    return g.desk_form  # type: ignore[no-any-return]


def field(name: str) -> str:
    """A decision's field: from the form, else from the form's action URL (an item's form
    carries its post, version and return page there, to keep the page light)."""
    return form().get(name) or request.args.get(name) or ""


def session() -> DeskSession:
    return g.desk  # type: ignore[no-any-return]


# -- session, CSRF and headers, for every desk request ------------------------------------------
@desk.before_request
def load_session() -> Response | None:
    g.desk = None
    if request.endpoint in ("desk.static", "desk.signin", "desk.signin_post"):
        return None
    found = sessions().get(request.cookies.get(COOKIE), touch=request.endpoint not in POLLS)
    if found is None:
        return to_signin()
    services().keys.hit(found.key_id)  # the desk counts against the key's rate limit like the API
    g.desk = found
    if request.method == "POST" and not csrf_ok(found.csrf, form().get("csrf_token")
                                               or request.headers.get("X-CSRF-Token")):
        raise Forbidden("the form's CSRF token is missing or does not belong to this session: "
                        "reload the page and try again")
    return None


def to_signin() -> Response:
    """Back to the sign-in page (no session, or it expired), keeping where the reviewer was."""
    target = url_for("desk.signin", next=request.full_path.rstrip("?")
                     if request.method == "GET" else None, expired=1 if request.cookies.get(COOKIE) else None)
    if is_htmx():
        resp = Response(status=401)
        resp.headers["HX-Redirect"] = target
    else:
        resp = redirect(target, 303)
    resp.delete_cookie(COOKIE, path="/desk")
    return resp


@desk.after_request
def security_headers(resp: Response) -> Response:
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Frame-Options"] = "DENY"
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "same-origin"
    if request.endpoint != "desk.static":
        resp.headers["Cache-Control"] = "no-store"
        resp.headers["Vary"] = "Cookie, HX-Request"
    return resp


@desk.errorhandler(FactSieveError)
def error_page(exc: FactSieveError) -> Response:
    body = public_problem(exc.to_problem())
    if not request.accept_mimetypes.accept_html and not is_htmx():
        return problem_response(body)
    if is_htmx():  # into the page's message area, whatever the request targeted
        resp = make_response(render_template("_message.html", problem=body), body["status"])
        resp.headers["HX-Retarget"] = "#messages"
        resp.headers["HX-Reswap"] = "innerHTML"
    else:
        resp = make_response(render_template("error.html", problem=body), body["status"])
    if exc.retry_after is not None:
        resp.headers["Retry-After"] = str(int(exc.retry_after))
    return resp


@desk.context_processor
def page_context() -> dict[str, Any]:
    found = current_app.extensions.get("factsieve")  # absent where templates render alone (tests)
    settings = found.settings if found else Settings()
    return {"desk_session": g.get("desk"), "p": p, "note_max": settings.review_note_max_chars,
            "fold_ratio": settings.desk_fold_ratio}


# -- sign-in, sign-out --------------------------------------------------------------------------------
def local_next(target: str | None) -> str:
    """Where a form goes next: a clean desk path (``present.local_target``), else the queue.
    Every route that writes computes it before writing (issue 35, item 3)."""
    return p.local_target(target) or url_for("desk.queue")


def set_cookie(resp: Response, name: str, value: str, max_age: int) -> None:
    resp.set_cookie(name, value, max_age=max_age, path="/desk", httponly=True, samesite="Strict",
                    secure=request.is_secure)


def count_signin_attempt() -> None:
    """One unauthenticated request against the client address's limit (429 past it): a sign-in
    page (it stores a token), and every sign-in that fails, however it fails."""
    svc = services()
    svc.keys.hit_unauthenticated(client_address(
        request.remote_addr, request.headers.get("X-Forwarded-For"), svc.settings.trust_x_forwarded_for))


def signin_form(error: str | None = None, status: int = 200, next_url: str | None = None) -> Response:
    expired = request.args.get("expired") == "1" and not error
    target = next_url or local_next(request.args.get("next"))
    pre, token = SignInTokens(services().kv).issue()
    resp = make_response(render_template("signin.html", signin_token=token, error=error,
                                         expired=expired, next=target), status)
    set_cookie(resp, SIGNIN_COOKIE, pre, SIGNIN_TTL_S)
    return resp


@desk.get("/signin")
def signin() -> Response:
    count_signin_attempt()
    return signin_form()


@desk.post("/signin")
def signin_post() -> Response:
    """Everything the answer needs is settled before the session is written: the form (a 413
    past its field limit), where to go next, the origin, the token, the key. Every failure is
    counted against the client address like a request with a bad API key."""
    svc = services()
    try:
        fields = form()
        target = local_next(fields.get("next"))
        if not same_origin(request.host, request.headers.get("Origin"),
                           request.headers.get("Sec-Fetch-Site")):
            raise Forbidden("sign in from the desk's own sign-in page: this form was posted from "
                            "another site")
        if not SignInTokens(svc.kv).consume(request.cookies.get(SIGNIN_COOKIE), fields.get("signin_token")):
            raise Forbidden("the sign-in form expired, was used already, or was not sent from this "
                            "page: reload it and sign in again")
        key = svc.keys.authenticate((fields.get("api_key") or "").strip() or None)
    except Unauthorized as exc:
        count_signin_attempt()
        return signin_form(str(exc), 401, target)
    except FactSieveError:
        count_signin_attempt()
        raise
    resp = redirect(target, 303)
    created = sessions().create(key)
    set_cookie(resp, COOKIE, created.token, svc.settings.desk_session_ttl_s)
    resp.delete_cookie(SIGNIN_COOKIE, path="/desk")
    return resp


@desk.post("/signout")
def signout() -> Response:
    sessions().end(session().token)
    resp = redirect(url_for("desk.signin"), 303)
    resp.delete_cookie(COOKIE, path="/desk")
    return resp


# -- reading --------------------------------------------------------------------------------------------
def now() -> datetime:
    return datetime.now(timezone.utc)


def render_queue(template: str, default_status: str, default_sort: str = "newest") -> Response:
    args = p.queue_args({**request.args.to_dict(), "sort": request.args.get("sort") or default_sort},
                        now(), status=default_status)
    page = services().review.queue(session().tenant, **args).to_dict()  # the page is an edge: its JSON
    state = p.filter_state(request.args)
    flash = sessions().pop_flash(session().token)
    return make_response(render_template(
        template, page=page, items=page.get("items", []), counts=page.get("counts", {}),
        args=args, state=state, flash=flash,
        next_url=(url_for(request.endpoint, **state, cursor=page["next"]) if page.get("next") else None),
        here=request.full_path.rstrip("?")))


@desk.get("/")
def queue() -> Response:
    return render_queue("queue.html", p.PENDING)


@desk.get("/fresh")
def fresh() -> Response:
    """How many pending items arrived since the queue page was drawn (its newest item's time,
    ``since``; ``seen``: how many items of that same time the page showed), under the page's
    filters: the page asks every ``FRESH_POLL_S`` seconds and offers to show them."""
    args = p.queue_args(request.args, now())
    args.pop("cursor", None)
    args["since"] = request.args.get("since") or now().isoformat(timespec="milliseconds")
    page = services().review.queue(session().tenant, **{**args, "status": p.PENDING}, limit=1).to_dict()
    new = p.fresh_count(page.get("counts", {}), request.args.get("seen"))
    return make_response(render_template("_fresh.html", new=new, poll_url=request.full_path,
                                         state=p.filter_state(request.args)))


@desk.get("/history")
def history() -> Response:
    return render_queue("history.html", p.DECIDED[0], default_sort="decided")


@desk.get("/items/<path:post_id>")
def item_page(post_id: str) -> Response:
    found = services().review.item(session().tenant, post_id).to_dict()
    return make_response(render_template("item.html", item=found, here=request.full_path.rstrip("?"),
                                         decisions=found.get("decisions", []), with_note=True))


@desk.get("/images/<path:post_id>")
def item_image(post_id: str) -> Response:
    """An image post's thumbnail: a JPEG the worker re-encoded from the decoded pixels (never
    the sent file, never a remote URL), served from the desk's own origin, which is all its
    CSP's ``img-src 'self'`` lets the page load; the tenant's items only."""
    resp = make_response(services().review.thumbnail(session().tenant, post_id))
    resp.headers["Content-Type"] = "image/jpeg"
    resp.headers["Content-Disposition"] = "inline"
    return resp


@desk.get("/search")
def search() -> Response:
    post_id = request.args.get("post_id", "")
    q = (request.args.get("q") or "").strip()
    found = services().review.search_factchecks(session().tenant, q, k=10) if q else []
    template = "_search.html" if is_htmx() else "search.html"
    return make_response(render_template(template, results=found, q=q, post_id=post_id,
                                         version=request.args.get("version", ""),
                                         here=local_next(request.args.get("back"))))


# -- deciding ---------------------------------------------------------------------------------------------
def may_decide() -> None:
    if not session().may_decide:
        raise Forbidden(f"the key {session().name!r} has scope {session().scope.value!r}: it may read "
                        "the queue, and deciding needs a write key")


def conflict_message(exc: Conflict) -> str:
    """What the page says on a 409: who decided the item first, and what."""
    first = getattr(exc, "decision", None) or {}  # DecisionConflict carries the winning decision
    if first.get("actor"):
        what = p.STATUS_LABELS.get(first.get("to_status", ""), first.get("action", "decided"))
        return (f"{first['actor']} already decided this item ({what}"
                f"{' at ' + str(first['at']) if first.get('at') else ''}); "
                f"your decision was not recorded. {exc.detail}")
    return f"{exc.detail} Your decision was not recorded."


def after_write(what: str, fn: Any, *args: Any) -> Any:
    """A step after a decision was recorded that only dresses the answer (a flash message, the
    item read back to redraw it): its failure must not turn a recorded decision into a 5xx,
    which the client reads as "not recorded" and retries into a 409. Logged; ``None``."""
    try:
        return fn(*args)
    except FactSieveError as exc:
        log.warning("after a recorded decision, %s failed: %s", what, exc.detail[:300])
        return None


@desk.post("/decide")
def decide() -> Response:
    """The answer's inputs (where to go back to) are computed before the decision is written,
    and nothing after the write can fail the request (``after_write``)."""
    may_decide()
    back = local_next(field("back"))
    record = p.decision(field("post_id"), form().get("choice"), field("version"), form().get("note"))
    tenant, review = session().tenant, services().review
    status, message = 200, None
    try:
        done = review.decide(tenant, session().name, [record], origin=ORIGIN)
    except Conflict as exc:
        status, message, done = 409, conflict_message(exc), []
    if not is_htmx():
        if message:
            after_write("the flash message", sessions().flash, session().token, message)
        return redirect(back, 303)
    read = after_write("reading the item back", review.item, tenant, record["post_id"])
    fresh = None if read is None else read.to_dict()
    if fresh is None:
        resp = make_response(render_template("_message.html", problem={
            "status": status, "title": "Recorded" if done else "Not recorded",
            "detail": message or "your decision was recorded; reload the page to see the item"}), status)
        resp.headers["HX-Retarget"] = "#messages"
        resp.headers["HX-Reswap"] = "innerHTML"
    else:
        resp = make_response(render_template("_item.html", item=fresh, conflict=message,
                                             just=[d.to_dict() for d in done],
                                             here=back), status)
    if done:
        resp.headers["HX-Trigger"] = "desk-decided"
    return resp


@desk.post("/bulk")
def bulk() -> Response:
    may_decide()
    back = local_next(form().get("back"))
    records, skipped = p.bulk_decisions(form().getlist("pick"), form().get("bulk"))
    try:
        done = services().review.decide_batch(session().tenant, session().name, records, origin=ORIGIN)
        message = p.bulk_message(form().get("bulk") == "confirm_top", len(records),
                                 [d.to_dict() for d in done.recorded],
                                 [n.to_dict() for n in done.not_recorded], len(skipped))
    except Conflict as exc:
        message = conflict_message(exc)
    after_write("the flash message", sessions().flash, session().token, message)
    return redirect(back, 303)
