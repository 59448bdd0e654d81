"""One page of servers from one source, in SQL: a cell's ``instances`` or the API
database's build requests (servers no cell holds yet).

Every filter is a WHERE clause and the page is ``ORDER BY <sort keys> LIMIT n`` after
the marker's sort values (keyset paging), so a name lookup among 100,000 servers is one
indexed query and no source ever returns more than a page. The caller merges the
sources' pages in the same order (``stratus.api.ops.server_list``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.servers import (
    BUILDING,
    DELETED,
    Server,
    _server,
    build_request_server,
    with_details,
)
from stratus.cells import schema as cs

# The sort keys a caller may ask for (Nova's names) and the Server attribute (and
# column) behind each. Only columns that are never NULL, so the merge across cells
# and the marker's comparison need no rule for NULLs.
SORT_KEYS = {"created_at": "created_at", "display_name": "name", "uuid": "uuid",
             "vm_state": "vm_state", "project_id": "project_id", "user_id": "user_id"}
TEXT_KEYS = frozenset({"name", "vm_state", "project_id", "user_id"})


@dataclass(frozen=True)
class SortKey:
    attr: str          # a Server attribute, also the column's name
    descending: bool


@dataclass(frozen=True)
class Filters:
    """What ``GET /servers`` was asked for, checked and normalised."""

    project_id: str | None = None              # None: every project (admin, all_tenants)
    vm_states: tuple[str, ...] | None = None   # None: any
    task_states: tuple[str | None, ...] | None = None
    host: str | None = None
    name: str | None = None                    # a regular expression (Nova's)
    changes_since: dt.datetime | None = None
    with_deleted: bool = False                 # changes-since and status=DELETED see them


def literal_of(pattern: str) -> tuple[str, bool, bool] | None:
    """``(text, anchored_start, anchored_end)`` if ``pattern`` is a plain string with at
    most ``^``/``$`` anchors (escaped metacharacters allowed), else None: such a regex is
    asked as ``=`` or ``LIKE``, which an index on the name can answer."""
    m = re.fullmatch(r"(\^?)((?:[^\\.^$*+?{}\[\]|()]|\\[^A-Za-z0-9])*)(\$?)", pattern)
    if m is None:
        return None
    text = re.sub(r"\\(.)", r"\1", m.group(2))
    return text, bool(m.group(1)), bool(m.group(3))


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def name_clause(column: sa.ColumnElement[Any], pattern: str) -> sa.ColumnElement[bool]:
    """Nova's name filter: ``re.search(pattern, name)``, in SQL (case-sensitive: names
    are kept in a binary collation on MySQL/MariaDB)."""
    literal = literal_of(pattern)
    if literal is None:
        return column.regexp_match(pattern)
    text, start, end = literal
    if start and end:
        return column == text
    like = ("" if start else "%") + _like_escape(text) + ("" if end else "%")
    return column.like(like, escape="\\")


def _ordered(column: sa.ColumnElement[Any], attr: str, dialect: str) -> Any:
    # PostgreSQL sorts text by the database's locale; the merge across sources (and
    # MySQL's utf8mb4_bin, SQLite's BINARY) compare code points: ask for the same.
    if attr in TEXT_KEYS and dialect == "postgresql":
        return column.collate("C")
    return column


def _after(columns: Sequence[Any], keys: Sequence[SortKey], values: Sequence[Any]
           ) -> sa.ColumnElement[bool]:
    """Rows strictly after the marker's ``values`` in the order ``keys`` (keyset paging):
    k1 > v1 OR (k1 = v1 AND k2 > v2) OR ... ('<' for descending keys)."""
    ors = []
    for i, key in enumerate(keys):
        ands = [columns[j] == values[j] for j in range(i)]
        ands.append(columns[i] < values[i] if key.descending else columns[i] > values[i])
        ors.append(sa.and_(*ands))
    return sa.or_(*ors)


def _page(conn: Connection, query: sa.Select, columns: dict[str, Any],
          keys: Sequence[SortKey], after: Sequence[Any] | None, limit: int) -> list[sa.Row]:
    dialect = conn.dialect.name
    ordered = [_ordered(columns[k.attr], k.attr, dialect) for k in keys]
    if after is not None:
        query = query.where(_after(ordered, keys, after))
    # A constant column (a build request's vm_state) orders nothing; PostgreSQL refuses
    # a constant in ORDER BY.
    query = query.order_by(*[c.desc() if k.descending else c.asc()
                             for c, k in zip(ordered, keys, strict=True)
                             if not isinstance(columns[k.attr], sa.BindParameter)])
    return list(conn.execute(query.limit(limit)))


def cell_page(conn: Connection, cell_uuid: str, filters: Filters, keys: Sequence[SortKey],
              after: Sequence[Any] | None, limit: int) -> list[Server]:
    """At most ``limit`` of this cell's servers matching ``filters``, in the order
    ``keys``, after the sort values ``after`` (None: from the start)."""
    t = cs.instances
    query = sa.select(t)
    if filters.project_id is not None:
        query = query.where(t.c.project_id == filters.project_id)
    if not filters.with_deleted:
        query = query.where(t.c.deleted_at.is_(None))
    if filters.vm_states is not None:
        query = query.where(t.c.vm_state.in_(filters.vm_states))
    if filters.task_states is not None:
        tasks = [x for x in filters.task_states if x is not None]
        query = query.where(sa.or_(t.c.task_state.in_(tasks), t.c.task_state.is_(None))
                            if None in filters.task_states else t.c.task_state.in_(tasks))
    if filters.host is not None:
        query = query.where(t.c.host == filters.host)
    if filters.name is not None:
        query = query.where(name_clause(t.c.name, filters.name))
    if filters.changes_since is not None:
        query = query.where(_changed_since(t, filters.changes_since))
    rows = _page(conn, query, {a: t.c[a] for a in SORT_KEYS.values()}, keys, after, limit)
    out = []
    for row in rows:
        server = _server(row, cell_uuid)
        if row.deleted_at is not None:
            server = replace(server, vm_state=DELETED)
        out.append(server)
    return with_details(conn, out)


def _changed_since(t: sa.Table, since: dt.datetime) -> sa.ColumnElement[bool]:
    # A row never updated changed when it was made. Two plain comparisons rather than
    # COALESCE, so the indexes on updated_at and created_at can serve them.
    return sa.or_(t.c.updated_at >= since,
                  sa.and_(t.c.updated_at.is_(None), t.c.created_at >= since))


def build_request_page(conn: Connection, filters: Filters, keys: Sequence[SortKey],
                       after: Sequence[Any] | None, limit: int) -> list[Server]:
    """The same for servers accepted but in no cell yet (status BUILD, no host)."""
    if filters.host is not None or (filters.vm_states is not None
                                    and BUILDING not in filters.vm_states):
        return []
    if filters.task_states is not None and "scheduling" not in filters.task_states:
        return []
    b, r = s.build_requests, s.request_specs
    query = sa.select(b, r.c.spec).select_from(
        b.outerjoin(r, r.c.instance_uuid == b.c.instance_uuid))
    if filters.project_id is not None:
        query = query.where(b.c.project_id == filters.project_id)
    if filters.name is not None:
        query = query.where(name_clause(b.c.name, filters.name))
    if filters.changes_since is not None:
        query = query.where(_changed_since(b, filters.changes_since))
    columns = {"created_at": b.c.created_at, "name": b.c.name, "uuid": b.c.instance_uuid,
               "vm_state": sa.literal(BUILDING), "project_id": b.c.project_id,
               "user_id": b.c.user_id}
    return [build_request_server(row) for row in _page(conn, query, columns, keys, after, limit)]
