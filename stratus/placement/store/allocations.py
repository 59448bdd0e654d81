"""Allocations: reading them, and replacing the allocations of several consumers at once.

The write (:func:`apply`) is the part that must never over-allocate. Inside
the request's one transaction it:

1. looks up, in one statement, the consumers and the ids of the providers,
   classes, projects, users and consumer types named; checks client-sent
   consumer generations (1.28+), then the names (409s and 400s before any lock);
2. moves each consumer's generation by compare-and-swap, creating consumers
   seen for the first time (consumers are locked in uuid order). On
   MySQL/MariaDB a write creating one new consumer creates it in step 4
   instead, after the providers are locked. Only another writer creating the
   same consumer can hold that row's key, and one of the two gets 409 either way
   (at worst through a deadlock the database breaks);
3. *claims* the providers: reads their generations, inventories and usage in
   one statement (one snapshot, so usage is exactly as new as the generation),
   checks every amount, then compare-and-swaps each provider's generation (in
   id order). Any writer that committed after our read moved the generation and
   our swap fails. The swap's row lock makes a concurrent claimer wait until we
   commit, and then its swap fails. A failed swap is retried against the new
   state, like Placement's ``allocation_conflict_retry_count`` (inside a
   savepoint when several providers are swapped, so an earlier swap of the
   failed attempt is undone); when retries run out the caller gets 409
   ``placement.concurrent_update``. On MySQL/MariaDB the read takes the row
   locks itself (FOR UPDATE), so the swaps cannot fail and go with step 4;
4. replaces the consumers' allocation rows and moves the running usage totals
   (queued in a ``storage.batch.Batch``: one query on MySQL/MariaDB), and
   deletes consumers left with none.

It does not call ``record_change``: it returns the providers whose usage
changed, and the caller (which may change inventories too, like the
reshaper) records them last.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors, model
from stratus.placement import schema as s
from stratus.placement.store import consumers
from stratus.placement.store.common import bump_generation, now, queue_swap, record_change
from stratus.storage import engine as db
from stratus.storage.batch import Batch, Outcome

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


# The two statements every claim runs are built once per shape instead (how many
# consumers, providers, classes... it names), with one plain parameter per list
# element: an "expanding" IN parameter is rendered into the SQL again on every
# execution, which cost about 70 us of CPU per statement here.
def _in(column: sa.ColumnElement, name: str, n: int) -> sa.ColumnElement[bool]:
    """``column IN (:name0, ..., :name{n-1})``; false for an empty list."""
    if n == 0:
        return sa.false()
    return column.in_([sa.bindparam(f"{name}{i}", type_=column.type) for i in range(n)])


def _bind(params: dict[str, object], name: str, values: list) -> int:
    """Add ``values`` as the parameters of an ``_in(..., name, len(values))``; their count."""
    params.update({f"{name}{i}": value for i, value in enumerate(values)})
    return len(values)


_rp, _rc, _inv, _a = s.resource_providers, s.resource_classes, s.inventories, s.allocations
_OLD = (sa.select(_a.c.consumer_id, _a.c.resource_provider_id, _a.c.resource_class_id,
                 _a.c.used)
        .where(_a.c.consumer_id.in_(_ids("consumers"))))
_DELETE_OLD = sa.delete(_a).where(_a.c.consumer_id.in_(_ids("consumers")))
_INSERT = sa.insert(_a)
# For a consumer inserted by the statement before, in the same query (MySQL/MariaDB):
# LAST_INSERT_ID() keeps that statement's id for the whole of this one.
_INSERT_FOR_NEW = sa.insert(_a).values(consumer_id=sa.func.last_insert_id())
# (SQLite ignores FOR UPDATE; its writers hold the database's write lock anyway.)
_LOCK_CONSUMER = (sa.select(s.consumers.c.id).where(s.consumers.c.uuid == sa.bindparam("uuid"))
                  .with_for_update())


# ---- 1. everything named, in one statement -------------------------------------
#
# Before it locks anything a write needs the consumers (generation, owner), the
# ids of the providers, classes, projects, users and consumer types it names.
# One UNION ALL fetches them all: on MariaDB every statement is a round trip to
# the server, and a claim for a new server used to spend three on this.

def _padded(kind: int, key: sa.ColumnElement, row_id: sa.ColumnElement) -> list:
    return [sa.literal(kind), key, row_id, sa.null(), sa.null(), sa.null(), sa.null()]


_c, _p, _u, _t = s.consumers, s.projects, s.users, s.consumer_types


@functools.lru_cache(maxsize=256)
def _lookup_select(consumers: int, uuids: int, names: int, projects: int, users: int,
                   types: int) -> sa.CompoundSelect:
    return sa.union_all(
        sa.select(sa.literal(0), _c.c.uuid, _c.c.id, _c.c.generation, _p.c.external_id,
                  _u.c.external_id, _t.c.name)
        .select_from(_c.join(_p, _c.c.project_id == _p.c.id).join(_u, _c.c.user_id == _u.c.id)
                     .outerjoin(_t, _c.c.consumer_type_id == _t.c.id))
        .where(_in(_c.c.uuid, "c", consumers)),
        sa.select(*_padded(1, _rp.c.uuid, _rp.c.id)).where(_in(_rp.c.uuid, "rp", uuids)),
        sa.select(*_padded(2, _rc.c.name, _rc.c.id)).where(_in(_rc.c.name, "rc", names)),
        sa.select(*_padded(3, _p.c.external_id, _p.c.id))
        .where(_in(_p.c.external_id, "p", projects)),
        sa.select(*_padded(4, _u.c.external_id, _u.c.id))
        .where(_in(_u.c.external_id, "u", users)),
        sa.select(*_padded(5, _t.c.name, _t.c.id)).where(_in(_t.c.name, "t", types)),
    )


@dataclass
class _Found:
    existing: dict[str, consumers.Consumer]   # consumers by uuid
    providers: dict[str, int]
    classes: dict[str, int]
    owners: consumers.KnownOwners


def _lookup(conn: Connection, writes: list[ConsumerWrite], uuids: list[str],
            names: list[str]) -> _Found:
    """What exists of everything the writes name."""
    owners = [w.owner for w in writes]
    found = _Found({}, {}, {}, consumers.KnownOwners({}, {}, {}))
    by_kind = (None, found.providers, found.classes, found.owners.projects,
               found.owners.users, found.owners.types)
    params: dict[str, object] = {}
    shape = (
        _bind(params, "c", sorted({w.uuid for w in writes})),
        _bind(params, "rp", sorted(set(uuids))),
        _bind(params, "rc", sorted(set(names))),
        _bind(params, "p", sorted({o.project_id for o in owners})),
        _bind(params, "u", sorted({o.user_id for o in owners})),
        _bind(params, "t", sorted({o.consumer_type for o in owners
                                   if o.consumer_type is not None})),
    )
    rows = conn.execute(_lookup_select(*shape), params)
    for kind, key, row_id, generation, project, user, ctype in rows:
        if kind == 0:
            found.existing[key] = consumers.Consumer(int(row_id), key, int(generation),
                                                      project, user, ctype)
        else:
            by_kind[kind][key] = int(row_id)  # type: ignore[index]
    return found


def _require(found: _Found, uuids: list[str], names: list[str]) -> None:
    """400 naming the first unknown provider, else the first unknown class (request order)."""
    for uuid in uuids:
        if uuid not in found.providers:
            raise UnknownProvider(f"Allocation for resource provider '{uuid}' that does not exist.")
    for name in names:
        if name not in found.classes:
            raise UnknownResourceClass(f"No such resource class {name}.")


# ---- 3. the providers' state, in one statement ----------------------------------
#
# Each claimed provider's generation and its inventories of the classes involved,
# with what is allocated there (``inventories.used``, the running total every
# allocation write keeps; see shift_usage). One statement reads both from one
# snapshot (a statement's snapshot under READ COMMITTED; the write lock on SQLite),
# so the usage is exactly as new as the generation: a writer that commits after it
# moves the generation and our swap fails. Its cost does not grow with the number
# of allocations a provider holds.

@functools.lru_cache(maxsize=256)
def _state_select(providers: int, classes: int, lock: bool = False) -> sa.Select:
    query = (
        sa.select(
            _rp.c.id.label("provider_id"), _rp.c.generation,
            _inv.c.resource_class_id, _inv.c.total, _inv.c.reserved, _inv.c.min_unit,
            _inv.c.max_unit, _inv.c.step_size, _inv.c.allocation_ratio, _inv.c.used,
        )
        .select_from(
            _rp.outerjoin(_inv, sa.and_(_inv.c.resource_provider_id == _rp.c.id,
                                        _in(_inv.c.resource_class_id, "k", classes)))
        )
        .where(_in(_rp.c.id, "id", providers))
    )
    if not lock:
        return query
    # Locking read (MySQL/MariaDB only, see apply): in id order, as the swaps lock,
    # and through the index the usage shift locks too (see _BY_PAIR).
    return query.order_by(_rp.c.id).with_for_update().with_hint(_inv, _BY_PAIR, "mysql")


# ---- 4. the running usage totals ---------------------------------------------------
#
# inventories.used is the sum of the allocations against that inventory, moved in
# the same transaction as the allocations themselves, by a relative update (so
# concurrent writers compose). Allocations exist only against an inventory (a claim
# refuses a class the provider lacks; an inventory in use cannot be removed), so
# every (provider, class) pair shifted has its row.

# InnoDB locks the records of the index a statement reads through. Left to choose,
# MariaDB's optimizer ran the shift below through the resource_class_id index while
# a claim's locking read had gone through another: two writers then held one index
# record each of the same row and waited for the other's (a deadlock, 409). Both go
# through the (provider, class) unique index, so they queue instead.
_BY_PAIR = "FORCE INDEX (uq_inventories_resource_provider_id_resource_class_id)"


@functools.lru_cache(maxsize=256)
def _shift_statement(pairs: int) -> sa.Update:
    keys = [sa.and_(_inv.c.resource_provider_id == sa.bindparam(f"p{i}"),
                    _inv.c.resource_class_id == sa.bindparam(f"c{i}")) for i in range(pairs)]
    delta = sa.case(*[(key, sa.bindparam(f"d{i}", type_=sa.Integer))
                      for i, key in enumerate(keys)], else_=0)
    return (sa.update(_inv).where(sa.or_(*keys)).values(used=_inv.c.used + delta)
            .with_hint(_BY_PAIR, dialect_name="mysql"))


def _amounts(held: Iterable[sa.Row]) -> dict[Key, int]:
    """Allocation rows (with ``resource_provider_id``, ``resource_class_id`` and
    ``used``) summed per (provider, class)."""
    out: dict[Key, int] = defaultdict(int)
    for row in held:
        out[(row.resource_provider_id, row.resource_class_id)] += int(row.used)
    return out


def shift_usage(conn: Connection, deltas: Mapping[Key, int], batch: Batch | None = None) -> None:
    """Add ``deltas`` ((provider, class) -> amount) to the running totals, in one statement
    (queued in ``batch`` if given)."""
    moved = sorted((key, amount) for key, amount in deltas.items() if amount)
    if not moved:
        return
    params: dict[str, int] = {}
    for i, ((provider_id, class_id), amount) in enumerate(moved):
        params.update({f"p{i}": provider_id, f"c{i}": class_id, f"d{i}": amount})

    def check(outcome: Outcome) -> None:
        if outcome.rowcount != len(moved):
            # An allocation against an inventory that is not there: the books no longer
            # balance, so refuse the write (it rolls back) rather than drift silently.
            raise RuntimeError(f"usage totals: {len(moved) - outcome.rowcount} of "
                               f"{len(moved)} (provider, class) pairs have no inventory row")

    if batch is not None:
        batch.add(_shift_statement(len(moved)), params, then=check)
    else:
        check(Outcome(conn.execute(_shift_statement(len(moved)), params).rowcount))


@dataclass(frozen=True)
class Applied:
    claimed: set[int]  # providers whose generation this write moved
    changed: set[int]  # providers whose usage may have changed (for the change log)


def apply(conn: Connection, writes: Iterable[ConsumerWrite],
          retries: int = DEFAULT_RETRIES, batch: Batch | None = None) -> Applied:
    """Replace the allocations of every consumer in ``writes``.

    Raises GenerationMismatch / ConcurrentUpdate (409), UnknownProvider /
    UnknownResourceClass (400) or Refused (409); the caller's transaction then
    rolls everything back. With ``batch``, the last writes are left queued in it
    for the caller to send with its own (:func:`replace` adds the change log).
    """
    own_batch = batch is None
    batch = Batch(conn) if batch is None else batch
    writes = list(writes)  # request order: errors name what the client sent first
    wanted = [(w.uuid, rp, rc, amount) for w in writes
              for rp, resources in w.allocations.items() for rc, amount in resources.items()]
    uuids = list(dict.fromkeys(rp for _, rp, _, _ in wanted))
    names = list(dict.fromkeys(rc for _, _, rc, _ in wanted))
    found = _lookup(conn, writes, uuids, names)
    current = found.existing
    # Placement's order: a stale consumer generation (409) before an unknown name (400).
    for w in writes:
        if w.check_generation:
            consumers.check_generation(w.uuid, current.get(w.uuid), w.generation)
    _require(found, uuids, names)
    rows = [_Row(c, rp, rc, (found.providers[rp], found.classes[rc]), amount)
            for c, rp, rc, amount in wanted]

    owners = consumers.resolve_owners(conn, [w.owner for w in writes], found.owners)
    # A claim for a new server (one consumer, new, given allocations) creates the
    # consumer in the batch, with the writes, when the batch goes as one query: its
    # allocation rows then take its id from LAST_INSERT_ID(). The providers are then
    # locked before the consumer is (see the module docstring on lock order).
    new_in_batch = (batch.pipelined and len(writes) == 1 and bool(writes[0].allocations)
                    and writes[0].uuid not in current)
    consumer_ids: dict[str, int] = {}
    for w in sorted(writes, key=lambda w: w.uuid):  # lock order
        existing = current.get(w.uuid)
        if existing is not None:
            consumers.advance(conn, existing, owners[w.owner])
            consumer_ids[w.uuid] = existing.id
        elif w.allocations and not new_in_batch:
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
    # What this write's consumers hold now, which the write replaces: the rest of a
    # provider's usage is everyone else's.
    mine = _amounts(old)

    if batch.pipelined:
        # MySQL/MariaDB: the state is read with FOR UPDATE. An InnoDB locking read
        # waits for a concurrent writer of these rows to commit and then reads the
        # newest committed rows, so nobody can move these generations before we
        # commit: the swaps cannot fail and wait in the batch, sent with the other
        # writes in one round trip. (PostgreSQL would re-read only the locked provider
        # row after such a wait, not the joined inventories, so it keeps the
        # compare-and-swap with retries below.)
        for provider_id, generation in _claim(conn, rows, mine, claimed, checked_classes,
                                              lock=True):
            queue_swap(batch, provider_id, generation)
    elif db.is_sqlite(conn):
        # The write began with BEGIN IMMEDIATE: no other writer can move a generation
        # before we commit, so a retry could never help and no savepoint is needed.
        # (Should a swap fail anyway, the 409 rolls the whole write back.)
        _swap_now(conn, _claim(conn, rows, mine, claimed, checked_classes))
    else:
        # A failed attempt must leave nothing behind. With one provider it cannot:
        # its only write is the swap that failed. With several, an earlier swap may
        # have landed, so the attempt runs inside a savepoint.
        for attempt in itertools.count(1):
            try:
                with conn.begin_nested() if len(claimed) > 1 else contextlib.nullcontext():
                    _swap_now(conn, _claim(conn, rows, mine, claimed, checked_classes))
                break
            except errors.ConcurrentUpdate:
                if attempt >= max(retries, 1):
                    raise errors.ConcurrentUpdate(consumers.CONCURRENT) from None

    # Every allocation of these consumers is replaced (or dropped): the totals move
    # by what is written less what they held.
    deltas = defaultdict(int, {key: -amount for key, amount in mine.items()})
    for r in rows:
        deltas[r.key] += r.used
    if old:
        conn.execute(_DELETE_OLD, {"consumers": existed})
    shift_usage(conn, deltas, batch)
    stamp = now()
    if new_in_batch:
        # Right before the rows: nothing between may set LAST_INSERT_ID().
        consumers.queue_create(batch, writes[0].uuid, owners[writes[0].owner])
        if rows:
            batch.add(_INSERT_FOR_NEW, [
                {"resource_provider_id": r.key[0], "resource_class_id": r.key[1],
                 "used": r.used, "created_at": stamp} for r in rows
            ])
    elif rows:
        batch.add(_INSERT, [
            {"resource_provider_id": r.key[0], "resource_class_id": r.key[1],
             "consumer_id": consumer_ids[r.consumer_uuid], "used": r.used, "created_at": stamp}
            for r in rows
        ])
    if emptied:
        batch.flush()   # the allocations must be gone before the consumers can go
        consumers.delete_if_unallocated(conn, emptied)
    if own_batch:
        batch.flush()
    return Applied(claimed, claimed | {o.resource_provider_id for o in old})


def _swap_now(conn: Connection, swaps: list[tuple[int, int]]) -> None:
    for provider_id, generation in swaps:
        bump_generation(conn, provider_id, expected=generation)


def _claim(conn: Connection, rows: list[_Row], mine: Mapping[Key, int], claimed: set[int],
           class_ids: set[int], lock: bool = False) -> list[tuple[int, int]]:
    """Check that ``rows`` fit next to everyone else's allocations; the generation swaps
    to make, as (provider id, generation read), in id order.

    ``mine``: what the consumers being written hold now, per (provider, class).
    ``lock``: read with FOR UPDATE (see apply), and read (so lock) the inventories
    of ``mine`` too: the usage shift at the end moves them, and taking those rows
    then, after others were locked here, could deadlock with another writer
    taking the same rows in id order (a move the other way; a DELETE).
    """
    if not claimed:
        return []
    providers, classes = set(claimed), set(class_ids)
    if lock:
        providers.update(p for p, _c in mine)
        classes.update(c for _p, c in mine)
    params: dict[str, object] = {}
    shape = (_bind(params, "id", sorted(providers)), _bind(params, "k", sorted(classes)), lock)
    generations: dict[int, int] = {}
    inventories: dict[Key, sa.Row] = {}
    usage: dict[Key, tuple[int, int]] = {}
    for r in conn.execute(_state_select(*shape), params):
        generations[r.provider_id] = int(r.generation)
        if r.resource_class_id is None:
            continue  # the provider has none of the classes
        key = (r.provider_id, r.resource_class_id)
        inventories[key] = r
        if r.used:
            usage[key] = (int(r.used), int(r.used) - mine.get(key, 0))
    _check(conn, rows, claimed, class_ids, inventories, usage)
    if not claimed <= generations.keys():  # deleted under us
        raise errors.ConcurrentUpdate(consumers.CONCURRENT)
    return [(provider_id, generations[provider_id]) for provider_id in sorted(claimed)]


def _check(conn: Connection, rows: list[_Row], claimed: set[int], class_ids: set[int],
           inventories: Mapping[Key, sa.Row], usage: Mapping[Key, tuple[int, int]]) -> None:
    # (The locking read may have read more classes than checked here: see _claim.)
    with_inventory = {p for p, c in inventories if c in class_ids}
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
    batch = Batch(conn)
    record_change(conn, apply(conn, writes, retries, batch).changed, batch)


def delete(conn: Connection, uuid: str) -> None:
    """DELETE /allocations/{uuid}: remove every allocation of the consumer, and the consumer.

    As in Placement, provider generations do not move: usage only shrinks.
    """
    # Lock the consumer before reading what it holds: every other write of its
    # allocations locks it too (apply advances its generation), so the rows read
    # here are the rows deleted, and the totals move by exactly their amounts. A
    # write that got in first is committed and seen; a second DELETE finds no consumer.
    consumer_id = conn.execute(_LOCK_CONSUMER, {"uuid": uuid}).scalar()
    a = s.allocations
    held = [] if consumer_id is None else conn.execute(
        sa.select(a.c.resource_provider_id, a.c.resource_class_id, a.c.used)
        .where(a.c.consumer_id == consumer_id)
    ).all()
    if consumer_id is None or not held:
        raise errors.NotFound(f"No allocations for consumer '{uuid}'")
    conn.execute(sa.delete(a).where(a.c.consumer_id == consumer_id))
    shift_usage(conn, {key: -amount for key, amount in _amounts(held).items()})
    consumers.delete_if_unallocated(conn, [int(consumer_id)])
    record_change(conn, {provider_id for provider_id, _class, _used in held})
