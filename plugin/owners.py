"""Who may change a stored fact-check or evidence document: the one place that decides it.

The corpus is shared and readable by every tenant (fact-checks and evidence are published work;
there are no private documents). Writes are the owner's: each document records in ``owner`` the
tenant that first wrote it, and updating it (re-ingesting its id) or deleting it is allowed to
that tenant and to admin keys only. A document written before owners existed has no ``owner``
and belongs to ``default``, the tenant of keys made before tenants and of the CLI.

Pure: the ingest pipelines look the batch's ids up in one ``Store.mget`` and ask ``plan`` which
records to write and how; ``check_delete`` does the same for one delete.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from plugin.errors import Forbidden, NotFound

#: The tenant of keys made before tenants existed, of ``keys create`` without ``--tenant``, of
#: the CLI's writes, and the owner of documents stored before owners were recorded.
DEFAULT_TENANT = "default"
#: The ``_source`` field (a keyword in the fact-check and evidence mappings) holding the owner.
FIELD = "owner"


@dataclass(frozen=True)
class Writer:
    """Who writes: a tenant, and whether it may change any tenant's documents (an admin key)."""

    tenant: str = DEFAULT_TENANT
    admin: bool = False

    def may_change(self, owner: str) -> bool:
        return self.admin or owner == self.tenant

    def to_dict(self) -> dict[str, Any]:
        """What a job's input carries, so that the worker writes as the submitter did."""
        return {"tenant": self.tenant, "admin": self.admin}

    @classmethod
    def of_job(cls, job: Mapping[str, Any]) -> Writer:
        """The writer a job records (``input.writer``); a job queued before writers were
        recorded writes as its tenant."""
        found = (job.get("input") or {}).get("writer") or {}
        return cls(tenant=str(found.get("tenant") or job.get("tenant") or DEFAULT_TENANT),
                   admin=bool(found.get("admin", False)))


@dataclass(frozen=True)
class Existing:
    """A stored document as ``plan`` needs it: its owner and its version for a conditional write."""

    owner: str
    seq_no: int
    primary_term: int


def owner_of(source: Mapping[str, Any] | None) -> str:
    """The owner a stored ``_source`` records; ``default`` when it records none (older documents)."""
    return str((source or {}).get(FIELD) or DEFAULT_TENANT)


def existing(hits: Mapping[str, Mapping[str, Any]]) -> dict[str, Existing]:
    """``Store.mget``'s found documents (``{id: hit}``) as ``{id: Existing}``."""
    return {doc_id: Existing(owner=owner_of(hit.get("_source")), seq_no=int(hit["_seq_no"]),
                             primary_term=int(hit["_primary_term"]))
            for doc_id, hit in hits.items()}


@dataclass(frozen=True)
class Write:
    """How to write one allowed record: the owner its document records (an admin's update keeps
    the owner it had) and the bulk action's condition, so that a document that changed hands
    between the look-up and the write is not overwritten: ``create`` for an id that did not
    exist, ``if_seq_no``/``if_primary_term`` for one that did."""

    owner: str
    condition: dict[str, Any]


def plan(ids: Iterable[str], found: Mapping[str, Existing], writer: Writer) -> dict[str, Write | None]:
    """For each id: how to write it, or ``None`` when it belongs to a tenant ``writer`` may not
    change (the record is refused; the others go on)."""
    out: dict[str, Write | None] = {}
    for doc_id in ids:
        have = found.get(doc_id)
        if have is None:
            out[doc_id] = Write(owner=writer.tenant, condition={"_op_type": "create"})
        elif writer.may_change(have.owner):
            out[doc_id] = Write(owner=have.owner, condition={
                "if_seq_no": have.seq_no, "if_primary_term": have.primary_term})
        else:
            out[doc_id] = None
    return out


def refusal(kind: str, doc_id: str) -> str:
    """The reject reason of a record whose id another tenant owns."""
    return (f"{kind} {doc_id} belongs to another tenant: only its owner or an admin key may "
            f"change it (nothing was written)")


def raced(kind: str, doc_id: str) -> str:
    """The reject reason of a record whose document changed between the look-up and the write."""
    return (f"{kind} {doc_id} was written by someone else during this ingest; nothing was "
            f"overwritten: send the record again")


def check_delete(kind: str, doc_id: str, have: Existing | None, writer: Writer) -> Existing:
    """``have`` when ``writer`` may delete it. Absent: ``NotFound``. Another tenant's: ``Forbidden``
    naming that, not a 404: the corpus is readable by every tenant, so the document's existence
    is no secret and a 404 would contradict ``GET``."""
    if have is None:
        raise NotFound(f"no {kind} with id {doc_id[:200]!r}")
    if not writer.may_change(have.owner):
        raise Forbidden(f"{kind} {doc_id} belongs to another tenant: only its owner or an admin "
                        f"key may delete it")
    return have
