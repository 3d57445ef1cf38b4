"""What every command shares: JSON output, date arguments, printing matches."""
from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from plugin.errors import BadInput

#: Evaluation and benchmark commands read this dataset when ``--dataset`` is not given.
DEFAULT_DATASET = Path("../shared/data/clef2020_task2")


def dump(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def parse_date(value: str | None, flag: str = "--date") -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadInput(f"{flag} must be YYYY-MM-DD, got {value!r}") from None


def dataset_path(given: Path | None, what: str = "") -> Path:
    """``--dataset`` or the default, refused with the fix when the folder is not there."""
    path = given or DEFAULT_DATASET
    if not path.exists():
        raise BadInput(f"dataset folder {str(path)!r} not found: pass --dataset DIR{what}")
    return path


def add_tenant_flag(parser: Any) -> None:
    """``--tenant``: the tenant a write command acts for (``plugin.owners``)."""
    parser.add_argument("--tenant", default="default",
                        help="write as this tenant: its documents may be updated, another "
                             "tenant's are rejected (default: default, the owner of documents "
                             "stored before owners were recorded)")


def writer_of(args: Any) -> Any:
    """The ``Writer`` a command's ``--tenant`` names (checked like a key's tenant)."""
    from plugin.owners import Writer
    from plugin.service.keys import check_tenant

    return Writer(tenant=check_tenant(args.tenant))


def print_matches(result: Any, header: str | None = None) -> None:
    if header:
        print(header)
    print(f"  language: {result.lang or '?'}   ({result.took_ms:.0f} ms)")
    if not result.matches:
        print("  no matches")
    for m in result.matches:
        extra = ", ".join(x for x in (m.get("lang"), m.get("rating"), m.get("url")) if x)
        print(f"  {m['rank']:>2}. [{m['score']:.4f}] {m['claim']}" + (f"  ({extra})" if extra else ""))
    for note in result.notes:
        print(f"  note: {note}")
