"""Allocations: reading them, and replacing the allocations of several consumers at once.

The write (:func:`apply`) is the part that must never over-allocate. Inside
the request's one transaction it:

1. checks client-sent consumer generations (1.28+) and resolves providers,
   classes, projects, users and consumer types (400s and 409s before any lock);
2. moves each consumer's generation by compare-and-swap, creating consumers
   seen for the first time (consumers are locked in uuid order);
3. *claims* the providers: reads their generations, then their inventories and
   usage, checks every amount, then compare-and-swaps each provider's generation
   (in id order). Generations are read before usage, so usage is at least as
   new as the generation; any writer that committed in between moved the
   generation and our swap fails. The swap's row lock makes a concurrent
   claimer wait until we commit, and then its swap fails. A failed swap rolls
   back to a savepoint and the claim is retried against the new state, like
   Placement's ``allocation_conflict_retry_count``; when retries run out the
   caller gets 409 ``placement.concurrent_update``;
4. replaces the consumers' allocation rows, and deletes consumers left with none.

It does not call ``record_change``: it returns the providers whose usage
changed, and the caller (which may change inventories too, like the
reshaper) records them last.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors, model
from stratus.placement import schema as s
from stratus.placement.store import consumers
from stratus.placement.store.common import bump_generation, now, record_change
from stratus.storage import engine as db

DEFAULT_RETRIES = 10

Key = tuple[int, int]  # (provider id, resource class id)


class UnknownProvider(errors.BadRequest):
    """An allocation names a provider that does not exist."""


class UnknownResourceClass(errors.BadRequest):
    """An allocation names a resource class that does not exist."""


class Refused(errors.Conflict):
    """The allocations do not fit: no such inventory, unit rules, or capacity."""


@dataclass(frozen=True)
class ConsumerWrite:
    """The complete new allocations of one consumer; empty ``allocations`` removes them all."""

    uuid: str
    owner: consumers.Owner
    allocations: Mapping[str, Mapping[str, int]]  # provider uuid -> class -> amount
    generation: int | None = None
    check_generation: bool = False


@dataclass(frozen=True)
class Held:
    """One allocation row as readers see it."""

    provider_uuid: str
    provider_generation: int
    consumer_uuid: str
    consumer_generation: int
    resource_class: str
    used: int
    stamp: dt.datetime | None


# ---- the arithmetic ---------------------------------------------------------


def refusal(inv: model.Inventory | sa.Row, others: int, requested: int,
            before: int | None) -> str | None:
    """Why ``requested`` (this write's total for one provider and class) cannot be allocated.

    ``others`` is what other consumers hold there, ``before`` the total held
    before this write (None if nothing was). Placement lets a write through an
    over-committed inventory (one shrunk below its usage) as long as it does not
    make things worse. Returns None if the amount fits.
    """
    if model.fits(inv, others, requested):
        return None
    if before is not None and others + requested <= before:
        return None
    return "capacity"


# ---- reading ----------------------------------------------------------------


def _held_select() -> sa.Select:
    a, rp, c, rc = s.allocations, s.resource_providers, s.consumers, s.resource_classes
    return (
        sa.select(
            rp.c.uuid.label("provider_uuid"), rp.c.generation.label("provider_generation"),
            c.c.uuid.label("consumer_uuid"), c.c.generation.label("consumer_generation"),
            rc.c.name.label("resource_class"), a.c.used,
            sa.func.coalesce(a.c.updated_at, a.c.created_at).label("stamp"),
        )
        .select_from(
            a.join(rp, a.c.resource_provider_id == rp.c.id)
            .join(c, a.c.consumer_id == c.c.id)
            .join(rc, a.c.resource_class_id == rc.c.id)
        )
        .order_by(a.c.id)
    )


def _held(row: sa.Row) -> Held:
    return Held(row.provider_uuid, int(row.provider_generation), row.consumer_uuid,
                int(row.consumer_generation), row.resource_class, int(row.used), row.stamp)


def for_consumer(conn: Connection, uuid: str) -> tuple[consumers.Consumer | None, list[Held]]:
    """The consumer (None if it holds nothing) and its allocations."""
    consumer = consumers.get(conn, uuid)
    if consumer is None:
        return None, []
    rows = conn.execute(_held_select().where(s.allocations.c.consumer_id == consumer.id))
    return consumer, [_held(r) for r in rows]


def for_provider(conn: Connection, provider_id: int) -> list[Held]:
    rows = conn.execute(_held_select().where(s.allocations.c.resource_provider_id == provider_id))
    return [_held(r) for r in rows]


# ---- writing ----------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    consumer_uuid: str
    provider_uuid: str
    resource_class: str
    key: Key
    used: int


# The write path's statements, built once: building and hashing a statement per
# call cost more CPU than SQLite spent running it (a claim runs about fifteen).
def _ids(name: str) -> sa.BindParameter:
    return sa.bindparam(name, expanding=True)


_rp, _rc, _inv, _a = s.resource_providers, s.resource_classes, s.inventories, s.allocations
# Providers by uuid (kind 0) and resource classes by name (kind 1), in one statement.
_IDS = sa.union_all(
    sa.select(sa.literal(0), _rp.c.uuid, _rp.c.id).where(_rp.c.uuid.in_(_ids("uuids"))),
    sa.select(sa.literal(1), _rc.c.name, _rc.c.id).where(_rc.c.name.in_(_ids("names"))),
)
_OLD = (sa.select(_a.c.consumer_id, _a.c.resource_provider_id, _a.c.resource_class_id)
        .where(_a.c.consumer_id.in_(_ids("consumers"))))
_DELETE_OLD = sa.delete(_a).where(_a.c.consumer_id.in_(_ids("consumers")))
_INSERT = sa.insert(_a)
_GENERATIONS = sa.select(_rp.c.id, _rp.c.generation).where(_rp.c.id.in_(_ids("providers")))
_INVENTORIES = sa.select(_inv).where(_inv.c.resource_provider_id.in_(_ids("providers")),
                                     _inv.c.resource_class_id.in_(_ids("classes")))


def _usage_select(mine: sa.ColumnElement[bool]) -> sa.Select:
    return (
        sa.select(
            _a.c.resource_provider_id.label("rp"), _a.c.resource_class_id.label("rc"),
            sa.func.sum(_a.c.used).label("total"),
            sa.func.sum(sa.case((mine, 0), else_=_a.c.used)).label("others"),
        )
        .where(_a.c.resource_provider_id.in_(_ids("providers")),
               _a.c.resource_class_id.in_(_ids("classes")))
        .group_by(_a.c.resource_provider_id, _a.c.resource_class_id)
    )


_USAGE = _usage_select(_a.c.consumer_id.in_(_ids("consumers")))
_USAGE_NO_CONSUMERS = _usage_select(sa.false())


def _provider_and_class_ids(conn: Connection, uuids: list[str], names: list[str]
                            ) -> tuple[dict[str, int], dict[str, int]]:
    """Ids of the named providers and classes; 400 naming the first unknown provider,
    else the first unknown class (in request order)."""
    found: tuple[dict[str, int], dict[str, int]] = ({}, {})
    for kind, key, row_id in conn.execute(_IDS, {"uuids": sorted(set(uuids)),
                                                  "names": sorted(set(names))}):
        found[kind][key] = row_id
    for uuid in uuids:
        if uuid not in found[0]:
            raise UnknownProvider(f"Allocation for resource provider '{uuid}' that does not exist.")
    for name in names:
        if name not in found[1]:
            raise UnknownResourceClass(f"No such resource class {name}.")
    return found


@dataclass(frozen=True)
class Applied:
    claimed: set[int]  # providers whose generation this write moved
    changed: set[int]  # providers whose usage may have changed (for the change log)


def apply(conn: Connection, writes: Iterable[ConsumerWrite],
          retries: int = DEFAULT_RETRIES) -> Applied:
    """Replace the allocations of every consumer in ``writes``.

    Raises GenerationMismatch / ConcurrentUpdate (409), UnknownProvider /
    UnknownResourceClass (400) or Refused (409); the caller's transaction then
    rolls everything back.
    """
    writes = list(writes)  # request order: errors name what the client sent first
    current = consumers.get_many(conn, [w.uuid for w in writes])
    for w in writes:
        if w.check_generation:
            consumers.check_generation(w.uuid, current.get(w.uuid), w.generation)

    wanted = [(w.uuid, rp, rc, amount) for w in writes
              for rp, resources in w.allocations.items() for rc, amount in resources.items()]
    rp_ids, rc_ids = _provider_and_class_ids(conn,
                                             list(dict.fromkeys(rp for _, rp, _, _ in wanted)),
                                             list(dict.fromkeys(rc for _, _, rc, _ in wanted)))
    rows = [_Row(c, rp, rc, (rp_ids[rp], rc_ids[rc]), amount) for c, rp, rc, amount in wanted]

    owners = consumers.resolve_owners(conn, [w.owner for w in writes])
    consumer_ids: dict[str, int] = {}
    for w in sorted(writes, key=lambda w: w.uuid):  # lock order
        existing = current.get(w.uuid)
        if existing is not None:
            consumers.advance(conn, existing, owners[w.owner])
            consumer_ids[w.uuid] = existing.id
        elif w.allocations:
            consumer_ids[w.uuid] = consumers.create(conn, w.uuid, owners[w.owner])
        # A consumer never seen, sent with no allocations: nothing to do.

    ours = set(consumer_ids.values())
    # Only consumers that existed can hold allocations already (one created just now
    # holds none), so a claim for a new server reads and deletes nothing here.
    existed = sorted(c.id for c in current.values() if c.id in ours)
    old = conn.execute(_OLD, {"consumers": existed}).all() if existed else []
    emptied = {consumer_ids[w.uuid] for w in writes if not w.allocations and w.uuid in consumer_ids}
    # Placement claims the providers named in the request, and, for a consumer
    # whose allocations are being removed, the providers it held.
    claimed = {r.key[0] for r in rows} | {o.resource_provider_id for o in old
                                          if o.consumer_id in emptied}
    checked_classes = {r.key[1] for r in rows} | {o.resource_class_id for o in old
                                                  if o.consumer_id in emptied}

    if db.is_sqlite(conn):
        # The write began with BEGIN IMMEDIATE: no other writer can move a generation
        # before we commit, so a retry could never help and no savepoint is needed.
        # (Should a swap fail anyway, the 409 rolls the whole write back.)
        _claim(conn, rows, ours, claimed, checked_classes)
    else:
        for attempt in itertools.count(1):
            try:
                with conn.begin_nested():
                    _claim(conn, rows, ours, claimed, checked_classes)
                break
            except errors.ConcurrentUpdate:
                if attempt >= max(retries, 1):
                    raise errors.ConcurrentUpdate(consumers.CONCURRENT) from None

    if old:
        conn.execute(_DELETE_OLD, {"consumers": existed})
    stamp = now()
    if rows:
        conn.execute(_INSERT, [
            {"resource_provider_id": r.key[0], "resource_class_id": r.key[1],
             "consumer_id": consumer_ids[r.consumer_uuid], "used": r.used, "created_at": stamp}
            for r in rows
        ])
    consumers.delete_if_unallocated(conn, emptied)
    return Applied(claimed, claimed | {o.resource_provider_id for o in old})


def _claim(conn: Connection, rows: list[_Row], ours: set[int], claimed: set[int],
           class_ids: set[int]) -> None:
    """Check that ``rows`` fit next to everyone else's allocations, then swap generations."""
    if not claimed:
        return
    providers, classes = sorted(claimed), sorted(class_ids)
    # Generations first: see the module docstring for why the order matters.
    generations = dict(conn.execute(_GENERATIONS, {"providers": providers}).all())
    inventories = {
        (r.resource_provider_id, r.resource_class_id): r
        for r in conn.execute(_INVENTORIES, {"providers": providers, "classes": classes})
    }
    params = {"providers": providers, "classes": classes}
    if ours:
        params["consumers"] = sorted(ours)
    usage = {
        (r.rp, r.rc): (int(r.total), int(r.others))
        for r in conn.execute(_USAGE if ours else _USAGE_NO_CONSUMERS, params)
    }
    _check(conn, rows, claimed, class_ids, inventories, usage)
    for provider_id in sorted(claimed):
        if provider_id not in generations:  # deleted under us
            raise errors.ConcurrentUpdate(consumers.CONCURRENT)
        bump_generation(conn, provider_id, expected=int(generations[provider_id]))


def _check(conn: Connection, rows: list[_Row], claimed: set[int], class_ids: set[int],
           inventories: Mapping[Key, sa.Row], usage: Mapping[Key, tuple[int, int]]) -> None:
    with_inventory = {key[0] for key in inventories}
    missing = claimed - with_inventory
    if missing:
        # Placement names every class of the request and every provider lacking all of them.
        names = _names(conn, s.resource_classes, class_ids)
        uuids = _names(conn, s.resource_providers, missing, column="uuid")
        raise Refused(f"Inventory for '{', '.join(names)}' on resource provider "
                      f"'{', '.join(uuids)}' invalid.")
    requested: dict[Key, int] = defaultdict(int)
    for r in rows:
        requested[r.key] += r.used
    for r in rows:
        inv = inventories.get(r.key)
        where = f"'{r.resource_class}' on resource provider '{r.provider_uuid}'"
        if inv is None:
            raise Refused(f"Inventory for {where} invalid.")
        if not model.amount_allowed(inv, r.used):
            raise Refused(f"Unable to create allocation for {where}. "
                          "The requested amount would violate inventory constraints.")
        before, others = usage.get(r.key, (None, 0))
        if refusal(inv, others, requested[r.key], before) is not None:
            raise Refused(f"Unable to create allocation for {where}. "
                          "The requested amount would exceed the capacity.")


def _names(conn: Connection, table: sa.Table, ids: set[int], column: str = "name") -> list[str]:
    col = table.c[column]
    return sorted(conn.execute(sa.select(col).where(table.c.id.in_(ids))).scalars())


def replace(conn: Connection, writes: Iterable[ConsumerWrite],
            retries: int = DEFAULT_RETRIES) -> None:
    """PUT and POST /allocations: :func:`apply`, then log the change."""
    record_change(conn, apply(conn, writes, retries).changed)


def delete(conn: Connection, uuid: str) -> None:
    """DELETE /allocations/{uuid}: remove every allocation of the consumer, and the consumer.

    As in Placement, provider generations do not move: usage only shrinks.
    """
    consumer = consumers.get(conn, uuid)
    a = s.allocations
    held = [] if consumer is None else conn.execute(
        sa.select(a.c.resource_provider_id).where(a.c.consumer_id == consumer.id)
    ).scalars().all()
    if consumer is None or not held:
        raise errors.NotFound(f"No allocations for consumer '{uuid}'")
    conn.execute(sa.delete(a).where(a.c.consumer_id == consumer.id))
    consumers.delete_if_unallocated(conn, [consumer.id])
    record_change(conn, held)
