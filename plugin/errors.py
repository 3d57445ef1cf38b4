"""FactSieve's own small error hierarchy.

Each error knows its HTTP status and CLI exit code, so the Flask error handler and the CLI's
``main()`` translate them in one place each. Messages name the offending input.
"""
from __future__ import annotations

import re
from typing import Any


def problem(status: int, title: str, detail: str, **extra: Any) -> dict[str, Any]:
    """An RFC 9457 problem body: the one error shape of the API, job results and webhooks."""
    return {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}


#: Where a backend is, in any form a message may name it: a URL (credentials and all), a bare
#: ``user:password@host``, an IPv6 literal (``[::1]:9200``, ``fe80::1``), an IPv4 address,
#: ``localhost``, urllib3's ``host='…'`` and any ``name:port`` (``opensearch:9200``). Matching
#: more than an address (a ``word:12`` that is none) costs a word of the message; missing one
#: costs the deployment's layout, so the forms are generous.
#:
#: Linear by construction, since a 5xx message can quote text a client chose (an LLM's answer, an
#: OpenSearch reason): each form starts only where the run of its characters starts (the
#: lookbehinds), never gives back what a possessive quantifier took, and a credential reads at
#: most 256 characters each side of its colon, so no form rescans the text from every position
#: (``":"*5000`` took 400 s before, ``"a:"*2500`` 190 s).
_ADDRESS = re.compile(r"""
      (?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^\s,;)'"<>]++       # scheme://[user:pass@]host[:port]/…
    | (?<![^\s/@'"<>(\[:])[^\s/@'"<>(\[:]{1,256}+:[^\s/@'"<>]{0,256}+@[^\s/'"<>,;)]++  # user:pass@host
    | \[(?=[0-9a-f.]*+:)[0-9a-f:.]++(?:%[\w.-]++)?\](?::\d++)?   # [IPv6] and [IPv6]:port
    | \bhost=(?:'[^']{0,300}'|"[^"]{0,300}")                     # urllib3's host='…'
    | (?<![\w:.])(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}(?![\w:])    # IPv6, all eight groups
    | (?<![\w:.])(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*+)?::        # IPv6 with a "::" …
      (?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*+)?(?:\.\d{1,3}){0,3}(?![\w:])
    | \b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b                   # IPv4[:port]
    | \blocalhost(?::\d{1,5})?\b
    | (?<![\w.-])[a-z][a-z0-9-]*+(?:\.[a-z0-9-]++)*+:\d{1,5}\b    # name:port
""", re.IGNORECASE | re.VERBOSE)
#: What an address becomes.
HIDDEN = "<backend>"


def scrub(text: str) -> str:
    """``text`` with every backend address (and any credentials in it) replaced by ``<backend>``:
    whoever reads it learns what failed, not where. Pure; the one scrub of the code base."""
    return _ADDRESS.sub(HIDDEN, text)


def public_problem(body: dict[str, Any]) -> dict[str, Any]:
    """The problem body as it may leave the process (an HTTP reply, a job's ``error`` or
    ``last_error``, a webhook): a 5xx one names a backend that failed, so its ``detail`` and
    field messages are scrubbed; a 4xx one is about the client's own input and is left whole
    (it may quote a URL the client sent). Returns a new dict."""
    if not isinstance(body, dict) or not isinstance(body.get("status"), int) or body["status"] < 500:
        return body
    out = dict(body)
    if isinstance(out.get("detail"), str):
        out["detail"] = scrub(out["detail"])
    if isinstance(out.get("errors"), list):
        out["errors"] = [{**e, "message": scrub(e["message"])}
                         if isinstance(e, dict) and isinstance(e.get("message"), str) else e
                         for e in out["errors"]]
    return out


class FactSieveError(Exception):
    """Base class. ``title`` is the short problem title; ``str(err)`` the detail."""

    status: int = 500
    exit_code: int = 1
    title: str = "FactSieve error"

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None,
                 retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        self.retry_after = retry_after

    def to_problem(self) -> dict[str, Any]:
        """An RFC 9457 problem body."""
        return problem(self.status, self.title, self.detail,
                       **({"errors": self.errors} if self.errors else {}))


class BadInput(FactSieveError):
    status, exit_code, title = 400, 2, "Bad input"


class NotFound(FactSieveError):
    status, exit_code, title = 404, 3, "Not found"


class ModelMismatch(FactSieveError):
    """The index was built with another embedding model (or dimension) than the one configured."""

    status, exit_code, title = 409, 4, "Embedding model mismatch"


class ModelUnavailable(FactSieveError):
    status, exit_code, title = 503, 5, "Embedding model unavailable"


class BackendUnavailable(FactSieveError):
    """OpenSearch or Redis cannot be reached."""

    status, exit_code, title = 503, 6, "Backend unavailable"

    def __init__(self, detail: str, **kw: Any) -> None:
        kw.setdefault("retry_after", 5)
        super().__init__(detail, **kw)


class BackendBusy(BackendUnavailable):
    """OpenSearch answered 429 (its queues are full): a 429 with ``Retry-After`` to our caller
    too, and, being a ``BackendUnavailable``, retried with backoff by the workers."""

    status, title = 429, "Backend busy"


class BackendError(FactSieveError):
    """OpenSearch answered, but with an error we did not expect."""

    status, exit_code, title = 502, 7, "Backend error"


# -- raised at the HTTP edge (API keys, rate limits, idempotency) -------------------------------
class InvalidRequest(BadInput):
    """A request body that fails its schema; ``errors`` names each offending field."""

    status, title = 422, "Invalid request"


class UnsupportedContentType(BadInput):
    """A body in a content type the route does not read (415; werkzeug's title)."""

    status, title = 415, "Unsupported Media Type"


class ContentTooLarge(BadInput):
    """A request body (or what it would make) over a limit; the message names the limit and
    the setting that raises it (413; werkzeug's title, the one its own 413 has)."""

    status, title = 413, "Request Entity Too Large"


class Conflict(FactSieveError):
    """The request contradicts what an earlier one established (e.g. a reused post id)."""

    status, exit_code, title = 409, 2, "Conflict"


class DecisionConflict(Conflict):
    """A review item was decided by someone else first (or changed since the version the caller
    read): the problem body carries that ``decision``. Found while checking, before anything is
    written: nothing of the batch was recorded. Found while writing (``recorded`` and
    ``not_recorded`` say which items went through and which did not): the API answers a partial
    batch with 207 instead (``plugin.review.records.Decided``) and raises this only for a batch
    of which nothing was recorded, so a 409 always means "nothing recorded"."""

    def __init__(self, detail: str, *, decision: dict[str, Any] | None,
                 recorded: list[dict[str, Any]] | None = None,
                 not_recorded: list[dict[str, Any]] | None = None, **kw: Any) -> None:
        super().__init__(detail, **kw)
        self.decision = decision
        self.recorded = recorded or []
        self.not_recorded = not_recorded or []

    def to_problem(self) -> dict[str, Any]:
        return {**super().to_problem(), "decision": self.decision, "recorded": self.recorded}


class Unauthorized(FactSieveError):
    status, exit_code, title = 401, 8, "Unauthorized"


class Forbidden(FactSieveError):
    status, exit_code, title = 403, 8, "Forbidden"


class RateLimited(FactSieveError):
    """A limit was reached: ``limit`` is its size (the ``RateLimit-Limit`` header), and
    ``retry_after`` when trying again can succeed."""

    status, exit_code, title = 429, 8, "Too many requests"

    def __init__(self, detail: str, *, limit: int | None = None, **kw: Any) -> None:
        super().__init__(detail, **kw)
        self.limit = limit


# -- the LLM used for verification (plugin.llm) -------------------------------------------------
class LLMUnavailable(BackendUnavailable):
    """The OpenAI-compatible LLM server cannot be reached, or keeps failing (5xx, 429).

    A ``BackendUnavailable``, so workers retry it with backoff like an unreachable OpenSearch.
    """

    title = "LLM unavailable"


class LLMNotConfigured(LLMUnavailable):
    """No LLM is configured (``FACTSIEVE_LLM_URL`` is unset): retrying cannot help, so callers
    that retry ``BackendUnavailable`` should catch this first and fail at once."""

    def __init__(self, detail: str, **kw: Any) -> None:
        kw.setdefault("retry_after", None)
        super().__init__(detail, **kw)


class LLMError(BackendError):
    """The LLM server answered with an error we cannot retry away (bad key, unknown model, a
    prompt longer than its context)."""

    title = "LLM error"


class LLMOutputInvalid(LLMError):
    """The LLM's answer did not parse or did not match the requested schema, even after one
    retry. ``raw`` holds the start of the answer (it is also in the message); the token counts
    cover both attempts (what the caller spent on it)."""

    title = "LLM output invalid"

    def __init__(self, detail: str, *, raw: str = "", **kw: Any) -> None:
        super().__init__(detail, **kw)
        self.raw = raw
        self.prompt_tokens = 0
        self.completion_tokens = 0
