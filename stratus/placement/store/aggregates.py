"""Which aggregates a provider belongs to.

An aggregate is only a uuid: it exists once some provider has named it and is
never deleted (Placement keeps them too). Setting a provider's aggregates
replaces the set; from 1.19 the caller names the generation it read, and the
write moves the generation even if the set did not change (as Placement does).
Before 1.19 the generation is neither checked nor moved. New aggregate rows are
the one thing a store function commits on its own (in a transaction apart, on
PostgreSQL and MariaDB; see ``_create_apart``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.store.common import bump_generation, record_change
from stratus.placement.store.common import now as _now
from stratus.storage import engine as db

GENERATION_CHANGED = (
    "Resource provider's generation already changed. Please update the generation and "
    "try again."
)


@dataclass(frozen=True)
class ProviderAggregates:
    generation: int
    aggregates: list[str]


def _provider(conn: Connection, uuid: str, lock: bool = False) -> sa.Row:
    rp = s.resource_providers
    stmt = sa.select(rp.c.id, rp.c.generation).where(rp.c.uuid == uuid)
    if lock:
        # Writers to one provider take turns, so two replacing its set at once
        # cannot both insert the same membership.
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    if row is None:
        raise errors.NotFound(f"No resource provider with uuid {uuid} found")
    return row


def _memberships(conn: Connection, provider_id: int) -> dict[str, int]:
    """Aggregate uuid -> aggregate id for the provider, in aggregate id order."""
    agg, rpa = s.placement_aggregates, s.resource_provider_aggregates
    rows = conn.execute(
        sa.select(agg.c.uuid, agg.c.id)
        .join(rpa, rpa.c.aggregate_id == agg.c.id)
        .where(rpa.c.resource_provider_id == provider_id)
        .order_by(agg.c.id)
    )
    return {row.uuid: row.id for row in rows}


def provider_aggregates(conn: Connection, uuid: str) -> ProviderAggregates:
    row = _provider(conn, uuid)
    return ProviderAggregates(int(row.generation), list(_memberships(conn, row.id)))


def provider_must_exist(conn: Connection, uuid: str) -> None:
    """404 for an unknown provider (Placement looks before it reads the body)."""
    _provider(conn, uuid)


def set_provider_aggregates(
    conn: Connection, uuid: str, aggregates: list[str], generation: int | None
) -> ProviderAggregates:
    """Replace the provider's aggregates.

    With ``generation`` (1.19+): 409 if it is stale, and the generation moves.
    Without: no check, no move. Returns the aggregates as given, and the
    provider's generation after the write.
    """
    provider = _provider(conn, uuid, lock=True)
    if generation is not None and provider.generation != generation:
        raise errors.ConcurrentUpdate(GENERATION_CHANGED)
    have = _memberships(conn, provider.id)
    wanted = set(aggregates)
    rpa = s.resource_provider_aggregates
    gone = [agg_id for agg_uuid, agg_id in have.items() if agg_uuid not in wanted]
    if gone:
        conn.execute(sa.delete(rpa).where(
            rpa.c.resource_provider_id == provider.id, rpa.c.aggregate_id.in_(gone)
        ))
    new = [agg_uuid for agg_uuid in aggregates if agg_uuid not in have]
    if new:
        stamp = _now()
        conn.execute(sa.insert(rpa), [
            {"resource_provider_id": provider.id, "aggregate_id": agg_id, "created_at": stamp}
            for agg_id in _ensure_aggregates(conn, new)
        ])
    new_gen = int(provider.generation)
    if generation is not None:
        new_gen = bump_generation(conn, provider.id, expected=generation)
    record_change(conn, [provider.id])
    return ProviderAggregates(new_gen, list(aggregates))


def _known(conn: Connection, uuids: list[str]) -> dict[str, int]:
    agg = s.placement_aggregates
    return dict(conn.execute(
        sa.select(agg.c.uuid, agg.c.id).where(agg.c.uuid.in_(uuids))
    ).tuples().all())


def _create_apart(engine: sa.Engine, uuids: list[str], attempts: int = 3) -> None:
    """Create these aggregate rows in short transactions of their own, as Placement does.

    Inside the caller's transaction, writers naming the same new aggregates wait
    on each other's uncommitted inserts until their whole writes end, and InnoDB
    breaks such a chain of three as a deadlock. An aggregate row is only a
    uuid's id, harmless to keep should the caller's write then fail.
    """
    agg = s.placement_aggregates
    for attempt in range(1, attempts + 1):
        try:
            with db.write(engine) as conn:
                for agg_uuid in uuids:
                    try:
                        with conn.begin_nested():
                            conn.execute(sa.insert(agg).values(uuid=agg_uuid))
                    except sa.exc.IntegrityError:
                        pass   # another writer made it first
            return
        except sa.exc.DBAPIError as exc:
            if attempt == attempts or not db.is_contention(exc):
                raise


def _ensure_aggregates(conn: Connection, uuids: list[str]) -> list[int]:
    """Ids for these aggregate uuids, creating the ones never seen before."""
    agg = s.placement_aggregates
    found = _known(conn, uuids)
    missing = sorted(u for u in uuids if u not in found)   # one lock order for all writers
    if missing and not db.is_sqlite(conn):
        # (SQLite has one writer at a time: a second transaction would wait for ours.)
        _create_apart(conn.engine, missing)
        found.update(_known(conn, missing))   # committed, so this statement sees them
    for agg_uuid in uuids:
        if agg_uuid in found:
            continue
        try:
            with conn.begin_nested():
                key = conn.execute(sa.insert(agg).values(uuid=agg_uuid)).inserted_primary_key
            assert key is not None
            found[agg_uuid] = int(key[0])
        except sa.exc.IntegrityError:
            # Another transaction created it first (its insert made ours wait
            # until it committed); a locking read sees its row.
            found[agg_uuid] = int(conn.execute(
                sa.select(agg.c.id).where(agg.c.uuid == agg_uuid).with_for_update(read=True)
            ).scalar_one())
    return [found[agg_uuid] for agg_uuid in uuids]
