"""Consumers: whoever holds allocations (an instance, a migration...), with a generation.

A consumer row exists exactly while the consumer holds allocations: it is
created by the write that gives it its first allocation (generation 1) and
deleted by the write that takes its last one away. So "no consumer" and
"consumer with no allocations" are the same thing, and a client that lost a
race or had a write refused can always start again with generation null.

Every allocation write moves the consumer's generation by compare-and-swap:
two writers holding the same generation cannot both win. Writers lock rows in
one global order, so concurrent writers queue instead of deadlocking:
projects, users, consumer types, consumers (by uuid), then providers (by id).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.store.common import ensure_external_id, now
from stratus.storage.batch import Batch

# What Placement reports as the type of a consumer that never had one (written before 1.38).
UNKNOWN_TYPE = "unknown"

CONCURRENT = "Another thread concurrently updated the data. Please retry your update"


class GenerationMismatch(errors.ConcurrentUpdate):
    """The consumer generation the client sent is not the current one (checked up front)."""


@dataclass(frozen=True)
class Consumer:
    id: int
    uuid: str
    generation: int
    project_id: str
    user_id: str
    consumer_type: str | None


@dataclass(frozen=True)
class Owner:
    """Who a write says the consumer belongs to. ``consumer_type`` None keeps the current one."""

    project_id: str
    user_id: str
    consumer_type: str | None = None


def _select() -> sa.Select:
    c, p, u, t = s.consumers, s.projects, s.users, s.consumer_types
    return (
        sa.select(
            c.c.id, c.c.uuid, c.c.generation,
            p.c.external_id.label("project_id"), u.c.external_id.label("user_id"),
            t.c.name.label("consumer_type"),
        )
        .select_from(
            c.join(p, c.c.project_id == p.c.id)
            .join(u, c.c.user_id == u.c.id)
            .outerjoin(t, c.c.consumer_type_id == t.c.id)
        )
    )


def _from_row(row: sa.Row) -> Consumer:
    return Consumer(row.id, row.uuid, int(row.generation), row.project_id, row.user_id,
                    row.consumer_type)


def get(conn: Connection, uuid: str) -> Consumer | None:
    row = conn.execute(_select().where(s.consumers.c.uuid == uuid)).first()
    return None if row is None else _from_row(row)


def check_generation(uuid: str, current: Consumer | None, given: int | None) -> None:
    """Placement 1.28+: the client must name the generation it last saw (null: new consumer)."""
    if current is None:
        if given is not None:
            raise GenerationMismatch(
                f"consumer generation conflict - expected null but got {given}"
            )
    elif current.generation != given:
        shown = "None" if given is None else given
        raise GenerationMismatch(
            f"consumer generation conflict - expected {current.generation} but got {shown}"
        )


def type_id(conn: Connection, name: str) -> int:
    """Id of the consumer type ``name``, creating it on first use."""
    ct = s.consumer_types
    found = conn.execute(sa.select(ct.c.id).where(ct.c.name == name)).scalar()
    if found is not None:
        return int(found)
    try:
        with conn.begin_nested():
            result = conn.execute(sa.insert(ct).values(name=name, created_at=now()))
        return int(result.inserted_primary_key[0])
    except sa.exc.IntegrityError:
        # Someone created it at the same moment; theirs will do.
        return int(conn.execute(sa.select(ct.c.id).where(ct.c.name == name)).scalar_one())


@dataclass(frozen=True)
class OwnerIds:
    project: int
    user: int
    consumer_type: int | None


@dataclass(frozen=True)
class KnownOwners:
    """Ids of the projects, users and consumer types found to exist (by name)."""

    projects: dict[str, int]
    users: dict[str, int]
    types: dict[str, int]


def resolve_owners(conn: Connection, owners: Iterable[Owner],
                   known: KnownOwners) -> dict[Owner, OwnerIds]:
    """Row ids for every owner, creating projects, users and types as needed, in lock order.

    ``known`` is what the caller already found to exist (``allocations`` looks them up
    in the same statement as everything else a write names); the rest are created.
    """
    owners = list(owners)
    wanted_projects = sorted({o.project_id for o in owners})
    wanted_users = sorted({o.user_id for o in owners})
    wanted_types = sorted({o.consumer_type for o in owners if o.consumer_type is not None})
    projects, users, types = dict(known.projects), dict(known.users), dict(known.types)
    for name in wanted_projects:
        if name not in projects:
            projects[name] = ensure_external_id(conn, s.projects, name)
    for name in wanted_users:
        if name not in users:
            users[name] = ensure_external_id(conn, s.users, name)
    for name in wanted_types:
        if name not in types:
            types[name] = type_id(conn, name)
    return {
        o: OwnerIds(projects[o.project_id], users[o.user_id],
                    None if o.consumer_type is None else types[o.consumer_type])
        for o in owners
    }


def create(conn: Connection, uuid: str, owner: OwnerIds) -> int:
    """Insert a consumer at generation 1 (it is being given its first allocations); its id.

    Two writers creating the same consumer at once: the second waits on the
    unique uuid, then loses with a concurrent-update conflict.
    """
    # No savepoint: a duplicate ends the whole write (409), so nothing after the
    # failed INSERT needs the transaction.
    try:
        result = conn.execute(_CREATE, _new_row(uuid, owner))
    except sa.exc.IntegrityError as exc:
        _taken(exc)
        raise
    return int(result.inserted_primary_key[0])


_CREATE = sa.insert(s.consumers)


def _new_row(uuid: str, owner: OwnerIds) -> dict[str, object]:
    return {"uuid": uuid, "project_id": owner.project, "user_id": owner.user, "generation": 1,
            "consumer_type_id": owner.consumer_type, "created_at": now()}


def queue_create(batch: Batch, uuid: str, owner: OwnerIds) -> None:
    """:func:`create`, queued in ``batch``: its id is ``LAST_INSERT_ID()`` for the
    statement right after it (MySQL/MariaDB; see ``store.allocations.apply``)."""
    batch.add(_CREATE, _new_row(uuid, owner), on_error=_taken)


def _taken(exc: sa.exc.StatementError) -> None:
    if isinstance(exc, sa.exc.IntegrityError):   # created meanwhile by another writer
        raise errors.ConcurrentUpdate(CONCURRENT) from None


def advance(conn: Connection, current: Consumer, owner: OwnerIds) -> None:
    """Compare-and-swap the generation forward, updating project, user and type with it."""
    c = s.consumers
    values: dict[str, object] = {
        "generation": c.c.generation + 1,
        "project_id": owner.project,
        "user_id": owner.user,
        "updated_at": now(),
    }
    if owner.consumer_type is not None:
        values["consumer_type_id"] = owner.consumer_type
    result = conn.execute(
        sa.update(c)
        .where(c.c.id == current.id, c.c.generation == current.generation)
        .values(**values)
    )
    if result.rowcount != 1:
        raise errors.ConcurrentUpdate(CONCURRENT)


def delete_if_unallocated(conn: Connection, consumer_ids: Iterable[int]) -> None:
    """Delete those of these consumers that hold no allocations any more."""
    ids = sorted(set(consumer_ids))
    if not ids:
        return
    a = s.allocations
    held = sa.exists().where(a.c.consumer_id == s.consumers.c.id)
    conn.execute(sa.delete(s.consumers).where(s.consumers.c.id.in_(ids), ~held))
