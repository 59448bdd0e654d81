"""``GET /servers``: one page of servers across every cell, as Nova pages them.

Each source (every cell's database, and the API database's build requests for servers
no cell holds yet) returns at most a page of its matching servers after the marker, in
the requested order; the pages are merged in that order and cut to the limit (Nova's
multi-cell "instance_list"). The marker is a server uuid: its sort values, read from
wherever the server is, are where the next page starts in every source.
"""

from __future__ import annotations

import datetime as dt
import functools
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import servers as server_ops
from stratus.api.store import server_query as q
from stratus.api.store import servers as store
from stratus.api.store.errors import BadRequest
from stratus.api.store.servers import Server
from stratus.storage import engine as db


@dataclass(frozen=True)
class Listing:
    filters: q.Filters
    keys: tuple[q.SortKey, ...]
    limit: int
    marker: str | None = None
    # Where the page starts, as sort values (a zone tree's top found its marker in
    # another leaf); instead of ``marker``.
    start: list[Any] | None = None


_TIMES = frozenset({"created_at", "updated_at", "launched_at"})


def wire_values(values: Sequence[Any], keys: Sequence[q.SortKey]) -> list[Any]:
    """Sort values as JSON carries them (times as ISO 8601)."""
    return [v.isoformat() if isinstance(v, dt.datetime) else v for v in values]


def from_wire(values: Any, keys: Sequence[q.SortKey]) -> list[Any]:
    """Sort values sent by :func:`wire_values`; BadRequest if they are not."""
    if not isinstance(values, list) or len(values) != len(keys):
        raise BadRequest("Invalid page start: one value per sort key.")
    try:
        return [dt.datetime.fromisoformat(v) if k.attr in _TIMES and v is not None else v
                for v, k in zip(values, keys, strict=True)]
    except (TypeError, ValueError):
        raise BadRequest("Invalid page start: times are ISO 8601.") from None


def after(listing: Listing, start: Any) -> Listing:
    """``listing`` starting after these sort values (none: from the first server)."""
    return replace(listing, marker=None,
                   start=from_wire(start, listing.keys) if start is not None else None)


def compare_values(keys: Sequence[q.SortKey], a: Sequence[Any], b: Sequence[Any]) -> int:
    """-1, 0 or 1: ``a`` before, with or after ``b`` in the order ``keys`` give."""
    for key, x, y in zip(keys, a, b, strict=True):
        if x != y:
            before = x < y
            return (1 if before else -1) if key.descending else (-1 if before else 1)
    return 0


# ---- one page ---------------------------------------------------------------------------


def _compare(keys: Sequence[q.SortKey], a: Server, b: Server) -> int:
    return compare_values(keys, sort_values(a, keys), sort_values(b, keys))


def sort_values(server: Server, keys: Sequence[q.SortKey]) -> list[Any]:
    return [q.sort_value(server, k.attr) for k in keys]


def marker_values(api: ComputeAPIDeps, listing: Listing) -> list[Any]:
    """The marker's sort values: it may be anywhere (a cell, a build request) and may be
    deleted since (a page of changes-since ended on it). 400 if there is no such server."""
    marker = listing.marker
    assert marker is not None
    with db.read(api.dbs.api) as conn:
        mapping = store.get_mapping(conn, marker)
    project = listing.filters.project_id
    found = None
    if mapping is not None and (project is None or mapping.project_id == project):
        found = server_ops.load_any(api, mapping)
    if found is None:
        raise BadRequest(f"marker [{marker}] not found")
    return sort_values(found, listing.keys)


def page(api: ComputeAPIDeps, listing: Listing) -> list[Server]:
    """At most ``listing.limit`` servers, in order, after the marker. A cell that does not
    answer is left out (logged), as the rest of the API reads cells."""
    if listing.limit == 0:
        return []
    after = listing.start if listing.start is not None else (
        marker_values(api, listing) if listing.marker else None)
    f, keys = listing.filters, listing.keys
    # One more than a page from each source: a server caught moving from its build
    # request into a cell may be in both, and is shown once.
    ask = listing.limit + 1
    # Build requests first, cells then: a server moving meanwhile is then seen twice (and
    # shown once) rather than in neither.
    try:
        with db.read_latest(api.dbs.api) as conn:
            building = q.build_request_page(conn, f, keys, after, ask)
    except sa.exc.DBAPIError as exc:
        # A regular expression Python reads but the database's own engine does not
        # (PostgreSQL's, MariaDB's): the caller's mistake, not the service's.
        if f.name is None or q.literal_of(f.name) is not None:
            raise
        why = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise BadRequest(f"Invalid name filter {f.name!r}: the database cannot match this "
                         f"regular expression ({why}).") from None
    got = api.dbs.gather(lambda c: api.dbs.read(c, q.cell_page, c.uuid, f, keys, after, ask))
    pages = list(got.results.values())
    in_cells = {s.uuid for p in pages for s in p}
    order = functools.cmp_to_key(functools.partial(_compare, keys))
    # Sorted here too: a build request has no column for some sort keys (its host, its
    # image is in its spec), which SQL orders as constants.
    pages.append(sorted((s for s in building if s.uuid not in in_cells), key=order))
    out: list[Server] = []
    for server in heapq.merge(*pages, key=order):
        out.append(server)
        if len(out) == listing.limit:
            break
    return out
