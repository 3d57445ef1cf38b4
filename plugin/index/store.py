"""The one module that talks to OpenSearch.

Everything else receives a ``Store`` and calls its small verbs; this is the single place for the
client, timeouts, retries, bulk streaming and the translation of client exceptions into
FactSieve's own errors (an unreachable cluster becomes ``BackendUnavailable`` naming the URL,
never a traceback).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

from opensearchpy import OpenSearch, helpers
from opensearchpy import exceptions as osx

from plugin.errors import BackendError, BackendUnavailable, BadInput, Conflict, FactSieveError, NotFound
from plugin.index.connection import tls_options
from plugin.index.translate import _reason, _ssl_reason, failure_kind, item_error, translate
from plugin.settings import Settings
from plugin.urls import redact_url

log = logging.getLogger(__name__)
T = TypeVar("T")


class Store:
    """A thin, translated facade over ``opensearchpy.OpenSearch``."""

    def __init__(self, settings: Settings, client: OpenSearch | None = None) -> None:
        # one URL, or several (a cluster's nodes, comma-separated): the client spreads requests
        # over them and retries a request that could not connect on another node
        hosts = [u.strip() for u in settings.opensearch_url.split(",") if u.strip()]
        self.url = ", ".join(redact_url(u) for u in hosts)  # what messages show: never credentials
        auth = None
        if settings.opensearch_user and settings.opensearch_password:
            auth = (settings.opensearch_user, settings.opensearch_password.get_secret_value())
        if any((auth or urlsplit(u).password) and u.startswith("http://") for u in hosts):
            log.warning("OpenSearch credentials are sent over plain http to %s: use https", self.url)
        self.client = client or OpenSearch(
            hosts=hosts, http_auth=auth, timeout=settings.opensearch_timeout_s,
            max_retries=2, retry_on_timeout=True, http_compress=False,
            # a connection per concurrent caller (API threads, bench's throughput run): with
            # one, urllib3 opened and dropped a connection for every extra concurrent request
            pool_maxsize=16, **tls_options(settings, hosts),
        )

    # -- error translation -------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except osx.SSLError as exc:  # not transient: the trust settings are wrong
            raise BackendError(
                f"TLS with OpenSearch at {self.url} failed ({what}): {_ssl_reason(exc)}. Set "
                f"FACTSIEVE_OPENSEARCH_CA_CERTS to the CA bundle that signed the cluster's "
                f"certificate (FACTSIEVE_OPENSEARCH_CLIENT_CERT/_KEY if it asks for one)") from exc
        except (osx.ConnectionError, osx.ConnectionTimeout) as exc:
            raise BackendUnavailable(
                f"OpenSearch is not reachable at {self.url} ({what}): start the local one with "
                f"`make up` (scripts/services.sh up), or set FACTSIEVE_OPENSEARCH_URL"
            ) from exc
        except osx.TransportError as exc:  # a 404 too: one table (plugin.index.translate)
            raise self._translated(exc, what) from exc

    def _raise_item(self, what: str, item: dict[str, Any]) -> None:
        """Raise what an msearch response's or an mget doc's own error translates to, through
        the same table as a whole answer's: a 429 item is a 429, not a 502."""
        exc = item_error(item)
        if exc is not None:
            raise self._translated(exc, what)

    def _translated(self, exc: osx.TransportError, what: str) -> FactSieveError:
        if failure_kind(exc) is not None:  # the client reads root causes only: the log has more
            log.warning("OpenSearch refused %s (%s): %s", what, exc.status_code, _reason(exc))
        return translate(exc, what, self.url)

    # -- cluster -------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        return self._call("info", self.client.info)

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except Exception:  # ping is a health probe: any failure means "not ready"
            return False

    def plugins(self) -> set[str]:
        rows = self._call("cat plugins", self.client.cat.plugins, format="json")
        return {row["component"] for row in rows}

    # -- templates, indexes, aliases ------------------------------------------------------------
    def put_component_template(self, name: str, body: dict[str, Any]) -> None:
        self._call(f"put component template {name}", self.client.cluster.put_component_template,
                   name=name, body=body)

    def put_index_template(self, name: str, body: dict[str, Any]) -> None:
        self._call(f"put index template {name}", self.client.indices.put_index_template,
                   name=name, body=body)

    def index_template(self, name: str) -> dict[str, Any] | None:
        """The index template's body, or ``None``."""
        if not self._call("exists index template", self.client.indices.exists_index_template, name=name):
            return None
        got = self._call(f"get index template {name}", self.client.indices.get_index_template, name=name)
        return got["index_templates"][0]["index_template"]

    def delete_index_template(self, name: str) -> None:
        """The index template and the component templates it alone composes (``<name>-…``)."""
        got = self.index_template(name)
        if got is None:
            return
        own = [c for c in got.get("composed_of", []) if c.startswith(f"{name}-")]
        self._call(f"delete index template {name}", self.client.indices.delete_index_template, name=name)
        for c in own:
            self._call(f"delete component template {c}", self.client.cluster.delete_component_template, name=c)

    def index_exists(self, name: str) -> bool:
        return bool(self._call(f"exists {name}", self.client.indices.exists, index=name))

    def create_index(self, name: str, body: dict[str, Any]) -> None:
        self._call(f"create index {name}", self.client.indices.create, index=name, body=body)

    def create_index_if_missing(self, name: str, body: dict[str, Any]) -> bool:
        """Create ``name`` unless it exists; safe when several processes race to create it."""
        if self.index_exists(name):
            return False
        return self._unless_exists(f"create index {name}", self.client.indices.create, index=name, body=body)

    def _unless_exists(self, what: str, fn: Callable[..., Any], **kwargs: Any) -> bool:
        """``fn`` called; False when the index it makes exists already (another process won)."""
        try:
            self._call(what, fn, **kwargs)
        except BadInput as exc:
            if "resource_already_exists" in str(exc):
                return False
            raise
        return True

    def delete_index(self, pattern: str) -> None:
        self._call(f"delete index {pattern}", self.client.indices.delete, index=pattern,
                   ignore_unavailable=True)

    def _aliases(self, alias: str) -> dict[str, dict[str, Any]]:
        """``{index: the alias's properties there}`` (empty when the alias does not exist)."""
        # asked of the alias's own name, not of every index: an identity limited to FactSieve's
        # indexes (a secured cluster's runtime role) may not ask about the others
        found = self._call(f"get alias {alias}", self.client.indices.get_alias, index=alias,
                           name=alias, ignore=[404])  # no alias (or no index) by that name: {}
        if isinstance(found.get("status"), int) and "error" in found:
            return {}
        return {i: body["aliases"][alias] for i, body in found.items() if alias in (body.get("aliases") or {})}

    def alias_indices(self, alias: str) -> list[str]:
        """The concrete indexes behind ``alias`` (empty when the alias does not exist)."""
        return sorted(self._aliases(alias))

    def write_index(self, alias: str) -> str | None:
        """The index ``alias`` writes to: the one marked ``is_write_index``, or its only index."""
        mine = self._aliases(alias)
        marked = [i for i, a in mine.items() if a.get("is_write_index")]
        return marked[0] if marked else (next(iter(mine)) if len(mine) == 1 else None)

    def created_ms(self, alias: str) -> dict[str, int]:
        """``{index: creation time in epoch ms}`` of the indexes behind ``alias``."""
        found = self._call(f"get settings {alias}", self.client.indices.get_settings, index=alias,
                           name="index.creation_date", ignore=[404])
        if isinstance(found.get("status"), int) and "error" in found:
            return {}
        return {i: int(body["settings"]["index"]["creation_date"]) for i, body in found.items()}

    def rollover(self, alias: str, new_index: str) -> bool:
        """Roll ``alias``'s writes over to ``new_index``; False when another process did first."""
        return self._unless_exists(f"rollover {alias}", self.client.indices.rollover, alias=alias, new_index=new_index)

    def indices_matching(self, pattern: str) -> list[str]:
        found = self._call(f"get {pattern}", self.client.indices.get, index=pattern,
                           allow_no_indices=True, ignore_unavailable=True)
        return sorted(found)

    def update_aliases(self, actions: list[dict[str, Any]]) -> None:
        """Apply alias actions atomically (one request), e.g. to switch to a new version."""
        self._call("update aliases", self.client.indices.update_aliases, body={"actions": actions})

    def mapping_meta(self, index: str) -> dict[str, Any]:
        found = self._call(f"get mapping {index}", self.client.indices.get_mapping, index=index)
        return next(iter(found.values()))["mappings"].get("_meta", {})

    def mapping_properties(self, index: str) -> dict[str, Any]:
        """The top-level fields of ``index``'s mapping (an alias: of its index)."""
        found = self._call(f"get mapping {index}", self.client.indices.get_mapping, index=index)
        return next(iter(found.values()))["mappings"].get("properties", {})

    def refresh(self, index: str) -> None:
        self._call(f"refresh {index}", self.client.indices.refresh, index=index)

    def count(self, index: str) -> int:
        return int(self._call(f"count {index}", self.client.count, index=index)["count"])

    def segment_count(self, index: str) -> int:
        """Searchable Lucene segments of the primary shards of ``index`` (an alias resolves to
        its index).

        Each segment is searched on its own (its own HNSW graph, its own postings), so a query
        costs about the sum over segments; deleted documents still cost until merged away.
        """
        found = self._call(f"segments {index}", self.client.indices.segments, index=index)
        total = 0
        for body in found["indices"].values():
            for copies in body["shards"].values():
                total += sum(1 for c in copies if c["routing"]["primary"]
                             for seg in c["segments"].values() if seg.get("search", True))
        return total

    def force_merge(self, index: str, *, max_segments: int = 1, lease_timeout_s: float = 90.0,
                    poll_s: float = 2.0) -> float:
        """Merge ``index`` down to ``max_segments`` per shard; returns the seconds it took.

        For an index that is loaded once and then only read (an evaluation corpus, a bulk
        load): one segment means one HNSW graph and one postings list per term per query.
        Waits first (up to ``lease_timeout_s``) until every shard's retention leases have
        passed its last operation: until then OpenSearch must keep ``_recovery_source`` (the
        unfiltered source, embedding included) and the merge could not drop it. An index that
        is already one segment is left as it is by the merge, recovery source included.
        The merge is sent once as a task and polled every ``poll_s`` (``wait_for_task``).
        """
        t0 = time.perf_counter()
        self.refresh(index)
        deadline = t0 + lease_timeout_s
        while not self._leases_caught_up(index) and time.perf_counter() < deadline:
            time.sleep(1.0)
        # sent once, as a task: a merge of a large index outlasts any client timeout, and a
        # request that timed out was sent again by the client's retry (merges stacked up)
        task = self._call(f"force merge {index}", self.client.indices.forcemerge, index=index,
                          max_num_segments=max_segments, wait_for_completion=False)
        self.wait_for_task(task["task"], what=f"force merge {index}", poll_s=poll_s)
        self.refresh(index)  # the merged segment becomes the searchable one
        return time.perf_counter() - t0

    def wait_for_task(self, task_id: str, *, what: str, poll_s: float = 2.0) -> dict[str, Any]:
        """Poll the tasks API until task ``task_id`` has completed, however long that takes (the
        node works on; only a node that stops answering ends the wait); its record, or
        ``BackendError`` when it failed."""
        while True:
            found = self._call(f"{what} (task {task_id})", self.client.tasks.get, task_id=task_id)
            if found.get("completed"):
                failed = found.get("error") or ((found.get("response") or {}).get("_shards") or {}).get("failures")
                if failed:
                    raise BackendError(f"{what} failed: {json.dumps(failed)[:500]}")
                return found
            time.sleep(poll_s)

    def _leases_caught_up(self, index: str) -> bool:
        stats = self._call(f"stats {index}", self.client.indices.stats, index=index, level="shards")
        for body in stats["indices"].values():
            for copies in body["shards"].values():
                for copy in copies:
                    leases = (copy.get("retention_leases") or {}).get("leases") or []
                    max_seq_no = (copy.get("seq_no") or {}).get("max_seq_no", -1)
                    if leases and min(le["retaining_seq_no"] for le in leases) <= max_seq_no:
                        return False
        return True

    # -- documents -----------------------------------------------------------------------------
    def get(self, index: str, doc_id: str, *, noun: str = "document") -> dict[str, Any]:
        """The document's source; ``NotFound`` names the ``noun`` and the id, in the caller's
        terms (never the index behind the alias, nor OpenSearch's answer)."""
        try:
            found = self._call(f"get {doc_id}", self.client.get, index=index, id=doc_id,
                               _source_excludes=["embedding"])
        except NotFound:
            raise NotFound(f"no {noun} with id {doc_id[:200]!r}") from None
        return found["_source"]

    def find(self, index: str, doc_id: str) -> dict[str, Any] | None:
        """The document's source, or ``None`` when it (or the index) does not exist."""
        found = self._call(f"get {doc_id}", self.client.get, index=index, id=doc_id,
                           _source_excludes=["embedding"], ignore=[404])
        return found.get("_source") if found.get("found") else None

    def mget(self, index: str, ids: list[str], *, source: list[str]) -> dict[str, dict[str, Any]]:
        """The documents of ``ids`` that exist, ``{id: hit}`` with ``_source`` (only the fields
        in ``source``), ``_seq_no`` and ``_primary_term``: one round trip for a batch, real-time
        (documents indexed moments ago count, refreshed or not)."""
        if not ids:
            return {}
        found = self._call(f"mget {index}", self.client.mget, index=index, body={"ids": ids},
                           _source_includes=source or False)
        out = {}
        for doc in found["docs"]:
            self._raise_item(f"mget {doc.get('_id')} from {index}", doc)
            if doc.get("found"):
                out[str(doc["_id"])] = doc
        return out

    def mget_across(self, alias: str, ids: list[str], *, source: list[str]) -> dict[str, dict[str, Any]]:
        """``mget`` over every index behind a rolling ``alias`` (OpenSearch's refuses one with
        several): ``{id: hit}``, the newest copy, its ``_index`` named (write it back there)."""
        if not ids:
            return {}
        indices = self.alias_indices(alias)
        if not indices:
            return {}
        docs = [{"_index": i, "_id": d} for d in ids for i in indices]
        found = self._call(f"mget {alias}", self.client.mget, body={"docs": docs},
                           _source_includes=source or False)
        out: dict[str, dict[str, Any]] = {}
        for doc in found["docs"]:
            if doc.get("error", {}).get("type") == "index_not_found_exception":
                continue  # deleted between the two calls
            self._raise_item(f"mget {doc.get('_id')} from {alias}", doc)
            if doc.get("found") and (str(doc["_id"]) not in out or doc["_index"] > out[str(doc["_id"])]["_index"]):
                out[str(doc["_id"])] = doc
        return out

    def put(self, index: str, doc_id: str, body: dict[str, Any], *, refresh: bool | str = False,
            create: bool = False, if_seq_no: int | None = None,
            if_primary_term: int | None = None) -> None:
        """Index (create or replace) one document. ``create``: only if no document has the id
        (``op_type=create``); ``if_seq_no``/``if_primary_term``: only over the version read.
        Either refused is ``Conflict``, nothing written."""
        params: dict[str, Any] = {"op_type": "create"} if create else {}
        if if_seq_no is not None:
            params.update(if_seq_no=if_seq_no, if_primary_term=if_primary_term)
        try:
            self._call(f"index {doc_id}", self.client.index, index=index, id=doc_id, body=body,
                       refresh=refresh, **params)
        except BackendError as exc:
            if isinstance(exc.__cause__, osx.ConflictError):
                raise Conflict(f"{doc_id[:200]} exists or changed since it was read") from exc
            raise

    def delete(self, index: str, doc_id: str, *, noun: str = "document",
               if_seq_no: int | None = None, if_primary_term: int | None = None) -> None:
        """Delete one document (``NotFound`` as ``get`` says it); with ``if_seq_no``/
        ``if_primary_term``, only the version read (another version: ``Conflict``, nothing
        deleted)."""
        params = ({"if_seq_no": if_seq_no, "if_primary_term": if_primary_term}
                  if if_seq_no is not None else {})
        try:
            self._call(f"delete {doc_id}", self.client.delete, index=index, id=doc_id,
                       refresh="wait_for", **params)
        except NotFound:
            raise NotFound(f"no {noun} with id {doc_id[:200]!r}") from None
        except BackendError as exc:
            if isinstance(exc.__cause__, osx.ConflictError):
                raise Conflict(f"{doc_id} changed while it was being deleted; nothing was "
                               f"deleted: try again") from exc
            raise

    def search(self, index: str, body: dict[str, Any], *,
               search_pipeline: str | None = None) -> dict[str, Any]:
        params = {"search_pipeline": search_pipeline} if search_pipeline else None
        return self._call(f"search {index}", self.client.search, index=index, body=body, params=params)

    def scan(self, index: str, body: dict[str, Any], *, size: int = 500) -> Iterator[dict[str, Any]]:
        """Every hit of ``body`` (scroll API), for batch reads such as copying a corpus."""
        iterator = iter(helpers.scan(self.client, index=index, query=body, size=size))
        while True:
            try:
                yield self._call(f"scan {index}", next, iterator)
            except StopIteration:
                return

    def sorted_hits(self, index: str, body: dict[str, Any], *, size: int = 500) -> Iterator[dict[str, Any]]:
        """Every hit of ``body`` in its ``sort`` (a total order), ``size`` a page (search_after)."""
        after = None
        while True:
            page = {**body, "size": size, **({"search_after": after} if after else {})}
            hits = self.search(index, page)["hits"]["hits"]
            yield from hits
            if len(hits) < size:
                return
            after = hits[-1]["sort"]

    def search_pipelines(self) -> set[str]:
        """Names of the search pipelines on the cluster (none yet: an empty set)."""
        try:
            found = self._call("get search pipelines", self.client.transport.perform_request,
                               "GET", "/_search/pipeline")
        except NotFound:
            return set()
        return set(found or {})

    def put_search_pipeline(self, name: str, body: dict[str, Any]) -> None:
        self._call(f"put search pipeline {name}", self.client.transport.perform_request,
                   "PUT", f"/_search/pipeline/{name}", body=body)

    def request(self, what: str, method: str, path: str, body: Any = None,
                params: dict[str, Any] | None = None) -> Any:
        """Any other REST call (ML Commons, ingest pipelines, stored scripts), through the same
        error translation. ``body`` may be bytes, sent as they are (a model chunk: ML Commons
        reads them whole under the client's JSON content type, the only kind OpenSearch admits)."""
        return self._call(what, self.client.transport.perform_request, method, path,
                          body=body, params=params)

    def put_ingest_pipeline(self, name: str, body: dict[str, Any]) -> None:
        self.request(f"put ingest pipeline {name}", "PUT", f"/_ingest/pipeline/{name}", body)

    def put_search_template(self, name: str, source: str) -> None:
        """A stored mustache search template (``_scripts/<name>``), its source as a string."""
        self.request(f"put search template {name}", "PUT", f"/_scripts/{name}",
                     {"script": {"lang": "mustache", "source": source}})

    def put_index_settings(self, index: str, settings: dict[str, Any]) -> None:
        self._call(f"put settings {index}", self.client.indices.put_settings, index=index,
                   body={"index": settings})

    def put_mapping(self, index: str, body: dict[str, Any]) -> None:
        """Add fields to ``index``'s mapping, or replace its ``_meta`` whole (callers merge
        with ``mapping_meta`` first)."""
        self._call(f"put mapping {index}", self.client.indices.put_mapping, index=index, body=body)

    def msearch(self, index: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run several searches in one round trip; a failed sub-search raises, naming its reason."""
        lines: list[dict[str, Any]] = []
        for body in bodies:
            lines.extend(({"index": index}, body))
        result = self._call(f"msearch {index}", self.client.msearch, body=lines)
        responses = result["responses"]
        for resp in responses:
            self._raise_item(f"msearch {index}", resp)
        return responses

    def bulk(self, actions: Iterable[dict[str, Any]], *, chunk_size: int = 200,
             refresh: bool | str = False) -> Iterator[tuple[bool, dict[str, Any]]]:
        """Stream bulk actions; yields ``(ok, info)`` per action and never raises per record.

        429 answers are retried with exponential backoff (opensearch-py's ``streaming_bulk``).
        A failure of the whole request (cluster down) raises ``BackendUnavailable``: those
        records were not accepted, and the caller's report must not claim otherwise.
        """
        stream = helpers.streaming_bulk(
            self.client, actions, chunk_size=chunk_size, raise_on_error=False,
            raise_on_exception=True, max_retries=5, initial_backoff=1, max_backoff=30,
            refresh=refresh,
        )
        iterator = iter(stream)
        while True:
            try:
                item = self._call("bulk", next, iterator)
            except StopIteration:
                return
            yield item
