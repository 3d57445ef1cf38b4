"""Who may change a stored fact-check or evidence document (plugin.owners, issue 21 point 7):
hand-checkable tables."""
import pytest

from plugin import owners
from plugin.errors import Forbidden, NotFound
from plugin.owners import Existing, Write, Writer

A, B, ADMIN = Writer("a"), Writer("b"), Writer("ops", admin=True)
OF_A, OF_DEFAULT = Existing("a", 7, 1), Existing("default", 3, 2)


@pytest.mark.parametrize("source, owner", [
    ({"owner": "a"}, "a"),
    ({}, "default"),            # stored before owners were recorded
    ({"owner": None}, "default"),
    (None, "default"),
])
def test_owner_of(source, owner):
    assert owners.owner_of(source) == owner


def test_existing_from_mget_hits():
    hits = {"x": {"_id": "x", "_seq_no": 7, "_primary_term": 1, "found": True, "_source": {"owner": "a"}},
            "old": {"_id": "old", "_seq_no": 3, "_primary_term": 2, "found": True, "_source": {}}}
    assert owners.existing(hits) == {"x": OF_A, "old": OF_DEFAULT}


@pytest.mark.parametrize("writer, found, expected", [
    # a new id: created as the writer's, and only if still new when written
    (B, None, Write("b", {"_op_type": "create"})),
    (ADMIN, None, Write("ops", {"_op_type": "create"})),
    # the owner updates its own, on the version it read
    (A, OF_A, Write("a", {"if_seq_no": 7, "if_primary_term": 1})),
    # another tenant: refused
    (B, OF_A, None),
    (A, OF_DEFAULT, None),
    (Writer(), OF_DEFAULT, Write("default", {"if_seq_no": 3, "if_primary_term": 2})),
    # an admin may update anyone's; the document keeps its owner
    (ADMIN, OF_A, Write("a", {"if_seq_no": 7, "if_primary_term": 1})),
])
def test_plan(writer, found, expected):
    assert owners.plan(["x"], {"x": found} if found else {}, writer) == {"x": expected}


def test_plan_refuses_only_the_other_tenants_ids():
    planned = owners.plan(["mine", "theirs", "new"], {"mine": Existing("b", 1, 1), "theirs": OF_A}, B)
    assert [doc_id for doc_id, w in planned.items() if w is None] == ["theirs"]


def test_check_delete():
    assert owners.check_delete("fact-check", "x", OF_A, A) is OF_A
    assert owners.check_delete("fact-check", "x", OF_A, ADMIN) is OF_A
    assert owners.check_delete("fact-check", "x", OF_DEFAULT, Writer()) is OF_DEFAULT
    with pytest.raises(Forbidden, match="fact-check x belongs to another tenant"):
        owners.check_delete("fact-check", "x", OF_A, B)
    with pytest.raises(NotFound, match="no fact-check with id 'x'"):
        owners.check_delete("fact-check", "x", None, A)


@pytest.mark.parametrize("job, writer", [
    ({"tenant": "a", "input": {"writer": {"tenant": "a", "admin": False}}}, A),
    ({"tenant": "ops", "input": {"writer": {"tenant": "ops", "admin": True}}}, ADMIN),
    ({"tenant": "a", "input": {}}, A),   # queued before writers were recorded: its tenant
    ({"input": {}}, Writer()),           # and before tenants: default
])
def test_writer_of_job(job, writer):
    assert Writer.of_job(job) == writer
    assert Writer.of_job({"tenant": writer.tenant, "input": {"writer": writer.to_dict()}}) == writer


def test_refusal_names_the_record():
    assert owners.refusal("fact-check", "fc-1").startswith("fact-check fc-1 belongs to another tenant")
