"""What every store module of the network service shares: ids, clocks, revisions, filters.

Every object carries a ``revision_number`` that each update advances; an update may
name the revision it read (Neutron's ``If-Match: revision_number=N``) and then
changes nothing unless that is still the current one: a compare-and-swap, the same
guard Placement's generations give.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors, schema


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def new_id() -> str:
    return str(uuid.uuid4())


def loads(text: str | None) -> dict[str, Any]:
    value = json.loads(text) if text else {}
    return value if isinstance(value, dict) else {}


def dumps(value: Mapping[str, Any] | None) -> str:
    return json.dumps(dict(value or {}), sort_keys=True)


def bump(conn: Connection, table: sa.Table, ident: str, values: Mapping[str, Any],
         expect_revision: int | None = None) -> None:
    """Write ``values`` on row ``ident`` and advance its revision; PreconditionFailed when
    ``expect_revision`` is given and is not the row's revision any more."""
    query = sa.update(table).where(table.c.id == ident)
    if expect_revision is not None:
        query = query.where(table.c.revision_number == expect_revision)
    written = conn.execute(query.values(**values, updated_at=utcnow(),
                                        revision_number=table.c.revision_number + 1))
    if written.rowcount == 0:
        if expect_revision is not None:
            raise errors.PreconditionFailed(
                f"Constrained to revision {expect_revision}, but the resource {ident} is at "
                "another revision now.", "RevisionNumberConstraintFailed")
        raise errors.NotFound(f"{ident} could not be found.")


def forget_tags(conn: Connection, ids: Sequence[str] | sa.Select) -> None:
    """Deleted resources' tags go with them (tags are kept by resource id, no key)."""
    t = schema.resource_tags
    conn.execute(sa.delete(t).where(t.c.resource_id.in_(ids)))


Filters = Mapping[str, Sequence[str]]


def where(query: sa.Select, table: sa.Table, filters: Filters,
          columns: Mapping[str, str]) -> sa.Select:
    """Narrow ``query`` by the filters that name a column (API name -> column name);
    repeated values of one filter are alternatives, filters are all required."""
    for name, values in filters.items():
        column = columns.get(name)
        if column is None:
            continue
        col = table.c[column]
        if isinstance(col.type, sa.Boolean):
            wanted = {v.strip().lower() in ("true", "1", "yes") for v in values}
            query = query.where(col.in_(sorted(wanted)))
        elif isinstance(col.type, (sa.Integer, sa.BigInteger)):
            # A number no column can hold matches nothing (and must not reach the driver).
            numbers = [n for n in (int(v) for v in values if v.strip().lstrip("-").isdigit())
                       if -2**31 <= n < 2**31]
            query = query.where(col.in_(numbers)) if numbers else query.where(sa.false())
        else:
            query = query.where(col.in_(list(values)))
    return query
