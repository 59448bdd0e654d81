"""Pieces every store module shares: clock, lookups, generations, the change log.

Store functions take an open ``Connection`` (one transaction, opened by the
caller with ``storage.engine.read``/``write``) and return plain data. They
raise typed errors from ``placement.errors``; they never commit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.storage.batch import Batch, Outcome


def now() -> dt.datetime:
    """Timestamps are naive UTC, second precision (what HTTP dates can carry)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def provider_row(conn: Connection, uuid: str) -> sa.Row:
    """The provider's row (id, uuid, name, generation, root/parent ids, stamps) or NotFound."""
    row = conn.execute(
        sa.select(s.resource_providers).where(s.resource_providers.c.uuid == uuid)
    ).first()
    if row is None:
        raise errors.NotFound(
            f"No resource provider with uuid {uuid} found", errors.PROVIDER_NOT_FOUND
        )
    return row


def bump_generation(conn: Connection, provider_id: int, expected: int | None = None) -> int:
    """Compare-and-swap the provider's generation; return the new one.

    With ``expected`` the update only lands if nobody else moved the generation
    since it was read; otherwise the caller lost a race and gets a 409 with
    ``placement.concurrent_update``. The UPDATE's row lock also serialises
    concurrent writers to the same provider until commit.
    """
    params = {"provider": provider_id, "stamp": now()}
    if expected is not None:
        _possible(expected)
        params["expected"] = expected
    _swapped(Outcome(conn.execute(_BUMP if expected is None else _SWAP, params).rowcount))
    if expected is not None:
        return expected + 1   # the swap matched ``expected`` and added one, under our lock
    return int(conn.execute(_GENERATION, {"provider": provider_id}).scalar_one())


def queue_swap(batch: Batch, provider_id: int, expected: int) -> None:
    """:func:`bump_generation` with ``expected``, queued in ``batch`` (its check included)."""
    _possible(expected)
    batch.add(_SWAP, {"provider": provider_id, "stamp": now(), "expected": expected},
              then=_swapped)


def _possible(expected: int) -> None:
    """A generation no provider can have (the column is 32-bit) is a conflict, decided
    here: the database would refuse to compare it."""
    if not 0 <= expected <= MAX_GENERATION:
        _swapped(Outcome(0))


def _swapped(outcome: Outcome) -> None:
    if outcome.rowcount != 1:
        raise errors.ConcurrentUpdate(
            "resource provider generation conflict: another process changed the provider "
            "since you read it. Please update the generation and try again."
        )


MAX_GENERATION = 2_147_483_647

# Built once (the claim path runs these per request; see store.allocations).
_rp = s.resource_providers
_BUMP = (sa.update(_rp).where(_rp.c.id == sa.bindparam("provider"))
         .values(generation=_rp.c.generation + 1, updated_at=sa.bindparam("stamp")))
_SWAP = _BUMP.where(_rp.c.generation == sa.bindparam("expected"))
_GENERATION = sa.select(_rp.c.generation).where(_rp.c.id == sa.bindparam("provider"))
_counter = s.change_counter
_COUNT = (sa.update(_counter).where(_counter.c.id == 1)
          .values(value=_counter.c.value + 1))
_COUNT_RETURNING = _COUNT.returning(_counter.c.value)
# MySQL/MariaDB have no UPDATE ... RETURNING; LAST_INSERT_ID(expr) stores the new value
# in the connection, and the server sends it back in the UPDATE's own reply (the
# cursor's lastrowid), so reading it costs no second statement.
_COUNT_LAST_ID = (sa.update(_counter).where(_counter.c.id == 1)
                  .values(value=sa.func.last_insert_id(_counter.c.value + 1)))
_COUNTER_VALUE = sa.select(_counter.c.value).where(_counter.c.id == 1)
_LOG_CHANGES = sa.insert(s.provider_changes)
# Sent in the same query as _COUNT_LAST_ID (a pipelined Batch), the log rows take the
# new counter value from LAST_INSERT_ID(), which keeps the previous statement's value
# for the whole of this one.
_LOG_CHANGES_LAST_ID = sa.insert(s.provider_changes).values(
    seq=sa.func.last_insert_id(), resource_provider_id=sa.bindparam("provider"))


# The change log keeps the last KEEP_CHANGES counter values; every PRUNE_EVERY-th
# write deletes what fell out of that window. A reader more than KEEP_CHANGES
# behind (a worker idle while that many writes happened) reloads its index
# instead: at a thousand writes a second that is a reload after 100 s of idling.
KEEP_CHANGES = 100_000
PRUNE_EVERY = 1_000
_PRUNE = sa.delete(s.provider_changes).where(s.provider_changes.c.seq <= sa.bindparam("through"))
_PRUNED = (sa.update(_counter).where(_counter.c.id == 1)
           .values(pruned_through=sa.bindparam("through")))


def record_change(conn: Connection, provider_ids: Iterable[int | None],
                  batch: Batch | None = None) -> None:
    """Log that this transaction changed these providers (None: something global).

    Call it last in every write transaction. The single counter row is locked
    until commit, so counter values commit in order and a reader that has seen
    value N has seen every change up to N. Under the same lock, one write in
    PRUNE_EVERY deletes the log entries older than the last KEEP_CHANGES values.

    With ``batch``, what it holds is sent first, and on MySQL/MariaDB the log goes
    in the same query (so the counter row is locked one round trip less).
    """
    ids = set(provider_ids)
    if batch is not None and batch.pipelined:
        batch.add(_COUNT_LAST_ID, then=lambda outcome: _prune_if_due(conn, outcome.lastrowid))
        if ids:
            batch.add(_LOG_CHANGES_LAST_ID, [{"provider": pid} for pid in ids])
        batch.flush()
        return
    if batch is not None:
        batch.flush()
    if conn.dialect.update_returning:   # SQLite, PostgreSQL: one statement, not two
        seq = int(conn.execute(_COUNT_RETURNING).scalar_one())
    elif conn.dialect.name == "mysql":
        seq = int(conn.execute(_COUNT_LAST_ID).lastrowid)
    else:
        conn.execute(_COUNT)
        seq = int(conn.execute(_COUNTER_VALUE).scalar_one())
    if ids:
        conn.execute(_LOG_CHANGES, [{"seq": seq, "resource_provider_id": pid} for pid in ids])
    _prune_if_due(conn, seq)


def _prune_if_due(conn: Connection, seq: int | None) -> None:
    if seq is None:
        raise RuntimeError("change counter: the new value did not come back")
    if seq % PRUNE_EVERY == 0 and seq > KEEP_CHANGES:
        through = {"through": seq - KEEP_CHANGES}
        conn.execute(_PRUNE, through)
        conn.execute(_PRUNED, through)


def resource_class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """Map resource class names to ids; BadRequest naming the first unknown one."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(
        sa.select(s.resource_classes.c.name, s.resource_classes.c.id).where(
            s.resource_classes.c.name.in_(wanted)
        )
    ).all()
    found = {name: rc_id for name, rc_id in rows}
    missing = sorted(wanted - found.keys())
    if missing:
        raise errors.BadRequest(f"Unknown resource class in inventory or request: {missing[0]}")
    return found


def trait_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """Map trait names to ids; BadRequest listing every unknown one."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(
        sa.select(s.traits.c.name, s.traits.c.id).where(s.traits.c.name.in_(wanted))
    ).all()
    found = {name: t_id for name, t_id in rows}
    missing = sorted(wanted - found.keys())
    if missing:
        raise errors.BadRequest(f"No such trait(s): {', '.join(missing)}")
    return found


def ensure_external_id(conn: Connection, table: sa.Table, external_id: str) -> int:
    """Id of the project/user row for ``external_id``, creating it if new."""
    found = conn.execute(
        sa.select(table.c.id).where(table.c.external_id == external_id)
    ).scalar()
    if found is not None:
        return int(found)
    try:
        with conn.begin_nested():
            result = conn.execute(
                sa.insert(table).values(external_id=external_id, created_at=now())
            )
        return int(result.inserted_primary_key[0])
    except sa.exc.IntegrityError:
        # Another transaction created it concurrently; theirs is as good as ours.
        return int(
            conn.execute(
                sa.select(table.c.id).where(table.c.external_id == external_id)
            ).scalar_one()
        )
