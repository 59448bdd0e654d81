"""One page of servers from one source, in SQL: a cell's ``instances`` or the API
database's build requests (servers no cell holds yet).

Every filter is a WHERE clause and the page is ``ORDER BY <sort keys> LIMIT n`` after
the marker's sort values (keyset paging), so a name lookup among 100,000 servers is one
indexed query and no source ever returns more than a page. The caller merges the
sources' pages in the same order (``stratus.api.ops.server_list``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.servers import (
    BUILDING,
    Server,
    build_request_server,
    servers_of,
)
from stratus.cells import schema as cs
from stratus.cells.states import SOFT_DELETED

# The sort keys a caller may ask for (Nova's names) and the Server attribute (and
# column) behind each.
SORT_KEYS = {"created_at": "created_at", "display_name": "name", "uuid": "uuid",
             "vm_state": "vm_state", "project_id": "project_id", "user_id": "user_id",
             "host": "host", "node": "node", "image_ref": "image_ref",
             "key_name": "key_name", "availability_zone": "availability_zone",
             "task_state": "task_state", "power_state": "power_state",
             "launched_at": "launched_at", "updated_at": "updated_at",
             "terminated_at": "deleted_at"}
TEXT_KEYS = frozenset({"name", "vm_state", "project_id", "user_id", "host", "node",
                       "image_ref", "key_name", "availability_zone", "task_state"})
# What a NULL sorts as, in SQL (COALESCE) and in the merge across sources alike, so
# both agree on one total order: before every other value.
_EPOCH = dt.datetime(1970, 1, 1)
NULL_AS: dict[str, Any] = {"host": "", "node": "", "image_ref": "", "key_name": "",
                           "availability_zone": "", "task_state": "",
                           "launched_at": _EPOCH, "updated_at": _EPOCH, "deleted_at": _EPOCH}


def sort_value(server: Any, attr: str) -> Any:
    value = getattr(server, attr)
    return NULL_AS[attr] if value is None and attr in NULL_AS else value


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
    changes_before: dt.datetime | None = None
    with_deleted: bool = False                 # changes-since and status=DELETED see them
    only_deleted: bool = False                 # an admin's deleted=true
    reservation_id: str | None = None          # the servers one multi-create made
    user_id: str | None = None
    image_ref: str | None = None
    flavorid: str | None = None
    uuids: tuple[str, ...] | None = None       # e.g. the servers an IP filter found
    # (column, regular expression): Nova's regex filters on instance columns (admins'
    # key_name, availability_zone, node...). Servers still building match none.
    patterns: tuple[tuple[str, str], ...] = ()


def _json_value(key: str, value: str, following: str) -> str:
    """A LIKE pattern finding ``"key": value`` in the JSON text the instance and spec
    rows keep (``json.dumps(..., sort_keys=True)``, so ``key`` is always followed by the
    key ``following``: a nested object, such as extra specs, would need both keys in
    that order to match too)."""
    return f'%"{key}": {_like_escape(json.dumps(value))}, "{following}": %'


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
    if attr in NULL_AS and not isinstance(column, sa.BindParameter):
        column = sa.func.coalesce(column, NULL_AS[attr])
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
    if filters.only_deleted:   # Nova's deleted=true: the soft-deleted ones too
        query = query.where(sa.or_(t.c.deleted_at.is_not(None), t.c.vm_state == SOFT_DELETED))
    elif not filters.with_deleted:
        # Soft-deleted servers are left out too, as Nova's default listing does.
        query = query.where(t.c.deleted_at.is_(None), t.c.vm_state != SOFT_DELETED)
    if filters.reservation_id is not None:
        query = query.where(t.c.reservation_id == filters.reservation_id)
    if filters.user_id is not None:
        query = query.where(t.c.user_id == filters.user_id)
    if filters.image_ref is not None:
        query = query.where(t.c.image_ref == filters.image_ref)
    if filters.flavorid is not None:
        query = query.where(t.c.flavor.like(
            _json_value("flavorid", filters.flavorid, "memory_mb"), escape="\\"))
    if filters.uuids is not None:
        query = query.where(t.c.uuid.in_(filters.uuids))
    for column, pattern in filters.patterns:
        query = query.where(name_clause(t.c[column], pattern))
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
    if filters.changes_before is not None:
        query = query.where(_changed_before(t, filters.changes_before))
    rows = _page(conn, query, {a: t.c[a] for a in SORT_KEYS.values()}, keys, after, limit)
    return servers_of(conn, rows, cell_uuid)


def _changed_since(t: sa.Table, since: dt.datetime) -> sa.ColumnElement[bool]:
    # A row never updated changed when it was made. Two plain comparisons rather than
    # COALESCE, so the indexes on updated_at and created_at can serve them.
    return sa.or_(t.c.updated_at >= since,
                  sa.and_(t.c.updated_at.is_(None), t.c.created_at >= since))


def _changed_before(t: sa.Table, before: dt.datetime) -> sa.ColumnElement[bool]:
    return sa.or_(t.c.updated_at <= before,
                  sa.and_(t.c.updated_at.is_(None), t.c.created_at <= before))


def build_request_page(conn: Connection, filters: Filters, keys: Sequence[SortKey],
                       after: Sequence[Any] | None, limit: int) -> list[Server]:
    """The same for servers accepted but in no cell yet (status BUILD, no host)."""
    if filters.host is not None or (filters.vm_states is not None
                                    and BUILDING not in filters.vm_states):
        return []
    if filters.task_states is not None and "scheduling" not in filters.task_states:
        return []
    if filters.only_deleted or filters.patterns:
        return []
    b, r = s.build_requests, s.request_specs
    query = sa.select(b, r.c.spec).select_from(
        b.outerjoin(r, r.c.instance_uuid == b.c.instance_uuid))
    if filters.project_id is not None:
        query = query.where(b.c.project_id == filters.project_id)
    if filters.user_id is not None:
        query = query.where(b.c.user_id == filters.user_id)
    if filters.name is not None:
        query = query.where(name_clause(b.c.name, filters.name))
    if filters.changes_since is not None:
        query = query.where(_changed_since(b, filters.changes_since))
    if filters.reservation_id is not None:
        # The build request keeps it in its JSON (sorted keys, json.dumps's separators).
        query = query.where(b.c.instance.like(
            f'%"reservation_id": "{_like_escape(filters.reservation_id)}"%', escape="\\"))
    if filters.changes_before is not None:
        query = query.where(_changed_before(b, filters.changes_before))
    if filters.uuids is not None:
        query = query.where(b.c.instance_uuid.in_(filters.uuids))
    if filters.image_ref is not None:
        query = query.where(r.c.spec.like(
            _json_value("image_id", filters.image_ref, "image_properties"), escape="\\"))
    if filters.flavorid is not None:
        query = query.where(r.c.spec.like(
            _json_value("flavorid", filters.flavorid, "memory_mb"), escape="\\"))
    columns: dict[str, Any] = {
        "created_at": b.c.created_at, "name": b.c.name, "uuid": b.c.instance_uuid,
        "vm_state": sa.literal(BUILDING), "project_id": b.c.project_id,
        "user_id": b.c.user_id, "task_state": sa.literal("scheduling"),
        "power_state": sa.literal(0), "updated_at": b.c.updated_at,
        **{attr: sa.literal(NULL_AS[attr]) for attr in
           ("host", "node", "image_ref", "key_name", "availability_zone", "launched_at",
            "deleted_at")}}
    return [build_request_server(row) for row in _page(conn, query, columns, keys, after, limit)]
