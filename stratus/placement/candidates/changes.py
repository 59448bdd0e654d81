"""Keeping a :class:`ProviderIndex` current from the database's change log.

Every write transaction ends with ``store.common.record_change``: it bumps the
one-row ``change_counter`` and logs which providers it touched in
``provider_changes`` (a NULL provider means "something global changed"); the
log keeps only recent values, and ``change_counter.pruned_through`` says from
where.
The counter row stays locked until commit, so values become visible in
order: once this reader sees value N, every change up to N is committed.

:func:`refresh` runs before each query, inside the query's read
transaction: it reads the counter and, if it moved, reloads just the
providers logged since (or everything, after a global change). Rows read may
already include changes logged after N; those providers are simply reloaded
again on the next refresh, which is harmless.

:class:`LiveIndex` is what the HTTP layer holds: one index per process,
guarded by a lock, built at first use.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import schema as s
from stratus.placement.candidates.index import (
    InventoryRecord,
    Names,
    ProviderIndex,
    ProviderRecord,
)

_CHUNK = 500


class LiveIndex:
    """The process's index, refreshed from the change log on every use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index: ProviderIndex | None = None

    @contextlib.contextmanager
    def current(self, conn: Connection) -> Iterator[ProviderIndex]:
        """The index as of ``conn``'s transaction, held exclusively while in use."""
        with self._lock:
            self._index = refresh(self._index, conn)
            yield self._index


# Statements run on every query are built once (building one costs more CPU than
# SQLite spends running it).
_COUNTER = sa.select(s.change_counter.c.value).where(s.change_counter.c.id == 1)
_cc, _pc = s.change_counter, s.provider_changes
# The counter, how far the log was pruned, and what was logged after ``:after`` up to
# the counter, in one statement (so from one snapshot): one row per change, or one
# row with a NULL seq when there is none.
_COUNTER_AND_CHANGES = (
    sa.select(_cc.c.value, _cc.c.pruned_through, _pc.c.seq, _pc.c.resource_provider_id)
    .select_from(_cc.outerjoin(_pc, sa.and_(_pc.c.seq > sa.bindparam("after"),
                                            _pc.c.seq <= _cc.c.value)))
    .where(_cc.c.id == 1)
)


def refresh(index: ProviderIndex | None, conn: Connection) -> ProviderIndex:
    """``index`` brought up to date (or a freshly loaded one, when that is needed)."""
    if index is None or index.seq is None:
        return load(conn, int(conn.execute(_COUNTER).scalar() or 0))
    rows = conn.execute(_COUNTER_AND_CHANGES, {"after": index.seq}).all()
    value = int(rows[0][0] or 0) if rows else 0
    pruned_through = int(rows[0][1] or 0) if rows else 0
    if value < index.seq or index.seq < pruned_through or index.needs_compaction():
        # Behind the pruned part of the log, the changes since index.seq are not
        # all there any more: read everything again.
        return load(conn, value)
    if value == index.seq:
        return index
    ids = {rp for _value, _pruned, seq, rp in rows if seq is not None}
    if None in ids or not _partial(index, conn, {int(i) for i in ids}):
        return load(conn, value)
    index.seq = value
    return index


def load_names(conn: Connection) -> Names:
    names = Names()
    names.set_classes(conn.execute(sa.select(s.resource_classes.c.id, s.resource_classes.c.name)))
    names.set_traits(conn.execute(sa.select(s.traits.c.id, s.traits.c.name)))
    return names


def load(conn: Connection, value: int) -> ProviderIndex:
    """A new index of every provider, as of change counter ``value``."""
    names = load_names(conn)
    names.add_aggregates(_raw(conn, "SELECT id, uuid FROM placement_aggregates"))
    inventories = _raw(conn, "SELECT resource_provider_id, resource_class_id, total, "
                             "reserved, min_unit, max_unit, step_size, allocation_ratio, "
                             "used FROM inventories")
    traits = _raw(conn, "SELECT resource_provider_id, trait_id FROM resource_provider_traits")
    aggregates = _raw(conn, "SELECT resource_provider_id, aggregate_id "
                            "FROM resource_provider_aggregates")
    providers = _raw(conn, "SELECT id, uuid, parent_provider_id, root_provider_id "
                           "FROM resource_providers")
    # Read in separate statements, so on PostgreSQL and MariaDB maybe at different
    # moments: rows of a provider deleted meanwhile are dropped (the change log
    # names it, so the next refresh settles it either way).
    known = {row[0] for row in providers}
    inventories = [row for row in inventories if row[0] in known]
    traits = [row for row in traits if row[0] in known]
    aggregates = [row for row in aggregates if row[0] in known]
    if any(t not in names.trait_name for _p, t in traits) or any(
            row[1] not in names.rc_name for row in inventories):
        # A class or trait created while we were reading: read the names again.
        fresh = load_names(conn)
        fresh.agg_uuid, fresh.agg_id = names.agg_uuid, names.agg_id
        names = fresh
    index = ProviderIndex.bulk(names, providers, inventories, traits, aggregates)
    index.seq = value
    return index


def _raw(conn: Connection, sql: str) -> list[tuple]:
    """All rows of a parameterless query, through the driver's cursor (several
    times faster than result rows for the hundreds of thousands a full load reads;
    still inside this connection's transaction)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()


def _partial(index: ProviderIndex, conn: Connection, ids: set[int]) -> bool:
    """Reload these providers into ``index``; False (and nothing changed) when what
    was read does not hang together, which the caller answers with a full load.

    On PostgreSQL and MariaDB each statement reads the latest commits: a provider
    read here may name a parent that a later statement no longer finds (moved
    away and deleted meanwhile). Each id is asked for once, so this ends."""
    wanted = set(ids)
    asked: set[int] = set()
    records: dict[int, ProviderRecord] = {}
    while wanted:
        asked |= wanted
        for rec in _records(conn, sorted(wanted)):
            records[rec.id] = rec
        # A new child may hang under providers the index has not seen yet.
        referenced = {r.parent_id for r in records.values() if r.parent_id is not None}
        referenced |= {r.root_id for r in records.values()}
        wanted = {i for i in referenced
                  if i not in records and i not in index.slot_of_id and i not in asked}
    removed = [i for i in ids if i not in records]
    gone = set(removed)
    for rec in records.values():
        for other in (rec.parent_id, rec.root_id):
            if other is not None and other not in records and (
                    other not in index.slot_of_id or other in gone):
                return False
    if gone and _left_under(index, gone, records.keys()):
        return False
    if any(name_missing(index.names, rec) for rec in records.values()):
        fresh = load_names(conn)
        fresh.agg_uuid, fresh.agg_id = index.names.agg_uuid, index.names.agg_id
        index.names = fresh
    _add_aggregate_names(index.names, conn, records.values())
    index.apply(sorted(records.values(), key=lambda r: r.id), removed)
    return True


def _left_under(index: ProviderIndex, gone: set[int], reloaded: Iterable[int]) -> bool:
    """Whether a provider this reload leaves as it is hangs under one it removes.

    Placement deletes no provider with children, so such a child was moved away
    first; both writes committed after the log was read (it names neither) and
    before the parent was: only a full load sees the child where it is now."""
    slots = [index.slot_of_id[i] for i in gone if i in index.slot_of_id]
    if not slots:
        return False
    under = np.flatnonzero(index.alive & (np.isin(index.parent, slots)
                                          | np.isin(index.root, slots)))
    keep = gone.union(reloaded)
    return any(int(index.db_id[slot]) not in keep for slot in under.tolist())


def ensure_names(index: ProviderIndex, conn: Connection, classes: Iterable[str],
                 traits: Iterable[str]) -> None:
    """Re-read class and trait names if the request names one the index lacks
    (creating a class or trait touches no provider, so it is not in the log)."""
    names = index.names
    if any(c not in names.rc_id for c in classes) or any(t not in names.trait_id
                                                           for t in traits):
        fresh = load_names(conn)
        fresh.agg_uuid, fresh.agg_id = names.agg_uuid, names.agg_id
        index.names = fresh


def name_missing(names: Names, rec: ProviderRecord) -> bool:
    return any(t not in names.trait_name for t in rec.trait_ids) or any(
        inv.rc_id not in names.rc_name for inv in rec.inventories
    )


def _add_aggregate_names(names: Names, conn: Connection, records: Iterable[ProviderRecord]
                         ) -> None:
    unknown = {a for r in records for a in r.aggregate_ids if a not in names.agg_uuid}
    for chunk in _chunks(sorted(unknown)):
        names.add_aggregates(conn.execute(
            sa.select(s.placement_aggregates.c.id, s.placement_aggregates.c.uuid)
            .where(s.placement_aggregates.c.id.in_(chunk))
        ))


def _chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]


def _records(conn: Connection, ids: list[int] | None) -> list[ProviderRecord]:
    """Providers with these ids (all when None), with everything the index keeps."""
    if ids is None:
        return _records_where(conn, None)
    out: list[ProviderRecord] = []
    for chunk in _chunks(ids):
        out.extend(_records_where(conn, chunk))
    return out


def _record_queries(by_id: bool) -> tuple[sa.Select, sa.CompoundSelect]:
    """The two reads behind provider records (all providers, or those in ``:ids``):
    providers with their inventories and usage, then their traits and aggregates."""
    rp, inv = s.resource_providers, s.inventories
    rpt, rpa = s.resource_provider_traits, s.resource_provider_aggregates

    def only(column: sa.ColumnElement) -> list[sa.ColumnElement]:
        return [column.in_(sa.bindparam("ids", expanding=True))] if by_id else []

    providers = (
        sa.select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id, rp.c.root_provider_id,
                  inv.c.resource_class_id, inv.c.total, inv.c.reserved, inv.c.min_unit,
                  inv.c.max_unit, inv.c.step_size, inv.c.allocation_ratio, inv.c.used)
        .select_from(rp.outerjoin(inv, inv.c.resource_provider_id == rp.c.id))
        .where(*only(rp.c.id))
    )
    tags = sa.union_all(
        sa.select(sa.literal(0), rpt.c.resource_provider_id, rpt.c.trait_id)
        .where(*only(rpt.c.resource_provider_id)),
        sa.select(sa.literal(1), rpa.c.resource_provider_id, rpa.c.aggregate_id)
        .where(*only(rpa.c.resource_provider_id)),
    )
    return providers, tags


_RECORD_QUERIES = {False: _record_queries(False), True: _record_queries(True)}


def _records_where(conn: Connection, ids: list[int] | None) -> list[ProviderRecord]:
    provider_q, tag_q = _RECORD_QUERIES[ids is not None]
    params = {} if ids is None else {"ids": ids}
    shapes: dict[int, tuple[str, int | None, int | None]] = {}
    inventories: dict[int, list[InventoryRecord]] = defaultdict(list)
    for row in conn.execute(provider_q, params):
        pid = row[0]
        shapes[pid] = (row[1], row[2], row[3])
        if row[4] is not None:   # a provider without inventory has one row of NULLs
            inventories[pid].append(InventoryRecord(
                row[4], int(row[5]), int(row[6]), int(row[7]), int(row[8]), int(row[9]),
                float(row[10]), int(row[11] or 0),
            ))
    traits: dict[int, set[int]] = defaultdict(set)
    aggs: dict[int, set[int]] = defaultdict(set)
    for kind, pid, tag in conn.execute(tag_q, params):
        (aggs if kind else traits)[pid].add(tag)
    return [
        ProviderRecord(
            id=pid, uuid=uuid, parent_id=parent, root_id=root if root is not None else pid,
            inventories=tuple(sorted(inventories.get(pid, ()), key=lambda inv: inv.rc_id)),
            trait_ids=frozenset(traits.get(pid, ())),
            aggregate_ids=frozenset(aggs.get(pid, ())),
        )
        for pid, (uuid, parent, root) in shapes.items()
    ]
