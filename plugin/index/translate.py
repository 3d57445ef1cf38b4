"""How ``Store`` translates an OpenSearch error (pure): which FactSieve error it is (``translate``,
one table for whole responses and for the items of an msearch or mget alike, so a 429 is a 429
wherever it came from), what went wrong in a message's words, and which failures are the
client's input rather than the cluster's health.

The second matters because a search whose input OpenSearch cannot use (a cursor's ``null`` in
``search_after``, a date that does not parse) fails on every shard, and OpenSearch says so with a
``search_phase_execution_exception`` and often status 500: read by status alone, that was
"Backend unavailable" with ``Retry-After`` (a retry cannot help) naming the index and a Java
exception. ``failure_kind`` reads the root causes instead.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opensearchpy import exceptions as osx

from plugin.errors import BackendBusy, BackendError, BackendUnavailable, BadInput, FactSieveError, NotFound

#: root causes that mean the request's own values were unusable: a client error (400)
INPUT_CAUSES = frozenset({"parse_exception", "parsing_exception", "x_content_parse_exception",
                          "illegal_argument_exception", "number_format_exception",
                          "query_shard_exception", "search_parse_exception", "json_parse_exception"})
#: root causes that mean the cluster is busy or partly down: retrying can help (503)
TRANSIENT_CAUSES = frozenset({"circuit_breaking_exception", "rejected_execution_exception",
                              "opensearch_rejected_execution_exception", "node_not_connected_exception",
                              "no_shard_available_action_exception", "node_closed_exception",
                              "cluster_block_exception", "timeout_exception"})


def failure_kind(exc: osx.TransportError) -> str | None:
    """``"input"`` when every root cause of a search that failed on every shard is the request's input,
    ``"failed"`` when a search failed on every shard for another reason that retrying will not
    change (a 502, not an outage), ``None`` when the status decides as before."""
    info = exc.info if isinstance(exc.info, dict) else {}
    err = info.get("error")
    if not isinstance(err, dict):
        return None
    kind = err.get("type")
    roots = {rc.get("type") for rc in err.get("root_cause") or [] if isinstance(rc, dict)}
    if kind != "search_phase_execution_exception" or not roots or roots & TRANSIENT_CAUSES:
        return None
    return "input" if roots <= INPUT_CAUSES else "failed"


def root_causes(exc: osx.TransportError) -> str:
    """The root causes' types only (``parse_exception``): what a client may read of a failure,
    without the reason text, which names indexes, shards and Java classes."""
    info = exc.info if isinstance(exc.info, dict) else {}
    err = info.get("error") if isinstance(info.get("error"), dict) else {}
    types = sorted({str(rc.get("type")) for rc in err.get("root_cause") or [] if isinstance(rc, dict)})
    return ", ".join(types) or str(err.get("type") or "error")


#: what an SSL error's text says, in words an operator can act on
_SSL_REASONS = {"certificate_verify_failed": "certificate verify failed",
                "wrong_version_number": "the node does not speak TLS there (http, not https?)",
                "certificate required": "the node asks for a client certificate",
                "hostname mismatch": "the certificate is for another host name",
                "unknown ca": "the node does not trust FactSieve's client certificate"}


def _ssl_reason(exc: osx.SSLError) -> str:
    text = str(exc.info or exc.error or exc)
    return next((words for known, words in _SSL_REASONS.items() if known in text.lower()), text[:200])


def _denied(reason: str) -> str:
    """The security plugin's refusal without the user's name: "no permissions for [action]"."""
    return reason.split(" and User [", 1)[0]


def _reason(exc: osx.TransportError) -> str:
    """What OpenSearch said went wrong, in a message's words: the error's type and its root
    cause's reason. Never the raw body: a JSON answer without an error (a missing document's
    ``{"_index": "<the physical index>", "found": false}``) says only that, and a non-JSON one
    (a proxy's page) its first line."""
    info = exc.info if isinstance(exc.info, dict) else {}
    err = info.get("error")
    if isinstance(err, dict):
        root = (err.get("root_cause") or [{}])[0]
        return f"{err.get('type', '')}: {root.get('reason') or err.get('reason')}".strip(": ")
    if isinstance(err, str):
        return err[:200]
    if info:
        return "not found" if info.get("found") is False or info.get("result") == "not_found" \
            else f"HTTP {exc.status_code}"
    text = str(exc.error or "").strip()
    if not text or text[0] in "{[":  # JSON under another content type: still a raw body
        return f"HTTP {exc.status_code}"
    return text.splitlines()[0][:200]


# -- the one table ----------------------------------------------------------------------------
#: what an error says, from (what was asked, the cluster's URL for messages, the error)
Words = Callable[[str, str, osx.TransportError], str]

#: OpenSearch's error type → FactSieve's error and its words: read before the status
TYPE_ERRORS: dict[str, tuple[type[FactSieveError], Words]] = {
    "index_not_found_exception": (NotFound, lambda what, url, exc:
                                  f"{what}: index not found: run `factsieve init` first"),
}
#: OpenSearch's status → FactSieve's error and its words; any other 5xx is ``STATUS_ERRORS[500]``,
#: any other status a ``BackendError`` naming it
STATUS_ERRORS: dict[int, tuple[type[FactSieveError], Words]] = {
    400: (BadInput, lambda what, url, exc: f"OpenSearch rejected the request ({what}): {_reason(exc)}"),
    401: (BackendError, lambda what, url, exc:
          f"OpenSearch at {url} did not accept FactSieve's identity ({what}): check "
          f"FACTSIEVE_OPENSEARCH_USER/_PASSWORD or the client certificate"),
    403: (BackendError, lambda what, url, exc:
          f"OpenSearch refused this to FactSieve's identity ({what}): {_denied(_reason(exc))}. "
          f"Templates, pipelines, index versions and aliases are installed by `factsieve init` "
          f"with the admin identity (FACTSIEVE_OPENSEARCH_ADMIN_USER/_PASSWORD); the runtime "
          f"identity needs the role in index_templates/security/roles.yml"),
    404: (NotFound, lambda what, url, exc: f"{what}: {_reason(exc)}"),
    429: (BackendBusy, lambda what, url, exc:
          f"OpenSearch at {url} is too busy for this request ({what}): {_reason(exc)}"),
    500: (BackendUnavailable, lambda what, url, exc:
          f"OpenSearch at {url} is overloaded or failing ({what}): {_reason(exc)}"),
}


def translate(exc: osx.TransportError, what: str, url: str) -> FactSieveError:
    """The FactSieve error for an OpenSearch error answer (pure): a search that failed on every
    shard by its root causes (``failure_kind``), else by its error type (``TYPE_ERRORS``), else
    by its status (``STATUS_ERRORS``). ``what``: the request, as messages name it."""
    status = exc.status_code if isinstance(exc.status_code, int) else 0
    kind = failure_kind(exc)
    if kind is not None:  # neither names the index nor quotes OpenSearch's Java
        verb = what.split(" ", 1)[0]
        if kind == "input":
            return BadInput(f"OpenSearch could not use this request's values ({verb}): {root_causes(exc)}")
        return BackendError(f"OpenSearch failed this request on every shard ({verb}): {root_causes(exc)}")
    info = exc.info if isinstance(exc.info, dict) else {}
    err = info.get("error")
    entry = TYPE_ERRORS.get(err.get("type")) if isinstance(err, dict) else None
    entry = entry or STATUS_ERRORS.get(500 if status > 500 else status)
    if entry is None:
        code = f" {status}" if status else ""  # an mget doc's error carries no status
        return BackendError(f"OpenSearch error{code} ({what}): {_reason(exc)}")
    cls, words = entry
    return cls(words(what, url, exc))


def item_error(item: dict[str, Any]) -> osx.TransportError | None:
    """An msearch response's, an mget doc's or a bulk action's own error as the exception a whole
    answer with it would have raised (``None`` when the item succeeded), for ``translate``."""
    err = item.get("error")
    if err is None:
        return None
    status = item.get("status") if isinstance(item.get("status"), int) else 0
    kind = err.get("type", "error") if isinstance(err, dict) else str(err)
    return osx.TransportError(status, kind, {"error": err, "status": status})
