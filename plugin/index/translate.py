"""How ``Store`` words an OpenSearch error (pure): what went wrong in a message's words, and
which failures are the client's input rather than the cluster's health.

The second matters because a search whose input OpenSearch cannot use (a cursor's ``null`` in
``search_after``, a date that does not parse) fails on every shard, and OpenSearch says so with a
``search_phase_execution_exception`` and often status 500: read by status alone, that was
"Backend unavailable" with ``Retry-After`` (a retry cannot help) naming the index and a Java
exception. ``failure_kind`` reads the root causes instead.
"""
from __future__ import annotations

from typing import Any

from opensearchpy import exceptions as osx

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
