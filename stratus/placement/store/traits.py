"""Traits: the standard set (seeded from os-traits), CUSTOM_* ones, and which providers carry them.

A provider's traits are replaced whole. Changing them moves the provider's
generation (a write that changes nothing leaves it alone, as in Placement);
the caller's generation is checked first so a stale writer gets a 409.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.store.common import bump_generation, now, record_change

CUSTOM_PREFIX = "CUSTOM_"
GENERATION_CHANGED = (
    "Resource provider's generation already changed. Please update the generation and "
    "try again."
)


@dataclass(frozen=True)
class Trait:
    name: str
    created_at: dt.datetime | None
    updated_at: dt.datetime | None

    @property
    def modified(self) -> dt.datetime | None:
        return self.updated_at or self.created_at


@dataclass(frozen=True)
class ProviderTraits:
    generation: int
    traits: list[Trait]


def _trait(row: sa.Row) -> Trait:
    return Trait(row.name, row.created_at, row.updated_at)


def _not_found(name: str) -> errors.NotFound:
    return errors.NotFound(f"No such trait(s): {name}.")


# ---- the traits themselves -------------------------------------------------------


def list_traits(
    conn: Connection,
    names: Iterable[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[Trait]:
    """Traits in id order, narrowed by exact names, a name prefix, and whether
    any provider carries them (each filter only when given)."""
    t, rpt = s.traits, s.resource_provider_traits
    stmt = sa.select(t).order_by(t.c.id)
    if names is not None:
        stmt = stmt.where(t.c.name.in_(list(names)))
    if prefix is not None:
        # A plain comparison, not LIKE: '_' and '%' in a prefix mean themselves,
        # and the match is case-sensitive on every backend.
        stmt = stmt.where(sa.func.substr(t.c.name, 1, len(prefix)) == prefix)
    if associated is not None:
        carried = sa.exists().where(rpt.c.trait_id == t.c.id)
        stmt = stmt.where(carried if associated else ~carried)
    return [_trait(r) for r in conn.execute(stmt)]


def get(conn: Connection, name: str) -> Trait:
    found = find(conn, name)
    if found is None:
        raise _not_found(name)
    return found


def find(conn: Connection, name: str) -> Trait | None:
    """The trait named ``name``, or None."""
    row = conn.execute(sa.select(s.traits).where(s.traits.c.name == name)).first()
    return _trait(row) if row is not None else None


def ensure(conn: Connection, name: str) -> tuple[Trait, bool]:
    """The trait named ``name``, creating it if missing; True if this call created it.

    The caller has checked the name is a valid custom trait.
    """
    found = find(conn, name)
    if found is not None:
        return found, False
    stamp = now()
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(s.traits).values(name=name, created_at=stamp))
    except sa.exc.IntegrityError:
        # Another request created it between our look and our insert: it exists,
        # which is all the caller asked for. Its stamp is not ours to know.
        return Trait(name, None, None), False
    # Readers resolving trait names (the candidates index) learn the new one.
    record_change(conn, [None])
    return Trait(name, stamp, None), True


def delete(conn: Connection, name: str) -> None:
    """Delete a custom trait no provider carries.

    404 if unknown, 400 if standard, 409 if a provider carries it.
    """
    trait_id = conn.execute(sa.select(s.traits.c.id).where(s.traits.c.name == name)).scalar()
    if trait_id is None:
        raise _not_found(name)
    if not name.startswith(CUSTOM_PREFIX):
        raise errors.BadRequest(f"Cannot delete standard trait {name}.")
    in_use = errors.Conflict(f"The trait {name} is in use by a resource provider.")
    rpt = s.resource_provider_traits
    if conn.execute(sa.select(rpt.c.trait_id).where(rpt.c.trait_id == trait_id).limit(1)).first():
        raise in_use
    try:
        with conn.begin_nested():
            conn.execute(sa.delete(s.traits).where(s.traits.c.id == trait_id))
    except sa.exc.IntegrityError:
        # A provider took the trait on after our check (the foreign key caught it).
        raise in_use from None
    record_change(conn, [None])


# ---- a provider's traits ----------------------------------------------------------


def _locked_provider(conn: Connection, uuid: str) -> sa.Row:
    """The provider's row, locked until commit so writers to it take turns.

    404 in Placement's words for these endpoints (no special error code).
    """
    rp = s.resource_providers
    row = conn.execute(
        sa.select(rp.c.id, rp.c.generation).where(rp.c.uuid == uuid).with_for_update()
    ).first()
    if row is None:
        raise errors.NotFound(f"No resource provider with uuid {uuid} found")
    return row


def _provider_trait_rows(conn: Connection, provider_id: int) -> list[sa.Row]:
    t, rpt = s.traits, s.resource_provider_traits
    return list(conn.execute(
        sa.select(t)
        .join(rpt, rpt.c.trait_id == t.c.id)
        .where(rpt.c.resource_provider_id == provider_id)
        .order_by(t.c.id)
    ))


def provider_traits(conn: Connection, uuid: str) -> ProviderTraits:
    rp = s.resource_providers
    row = conn.execute(
        sa.select(rp.c.id, rp.c.generation).where(rp.c.uuid == uuid)
    ).first()
    if row is None:
        raise errors.NotFound(f"No resource provider with uuid {uuid} found")
    traits = [_trait(r) for r in _provider_trait_rows(conn, row.id)]
    return ProviderTraits(int(row.generation), traits)


def set_provider_traits(
    conn: Connection, uuid: str, names: Iterable[str], generation: int
) -> ProviderTraits:
    """Replace the provider's traits with ``names`` if its generation is still
    ``generation``. 404 unknown provider, 409 stale generation, 400 unknown trait."""
    provider = _locked_provider(conn, uuid)
    if provider.generation != generation:
        raise errors.ConcurrentUpdate(GENERATION_CHANGED)
    wanted = set(names)
    rows = list(conn.execute(
        sa.select(s.traits).where(s.traits.c.name.in_(wanted)).order_by(s.traits.c.id)
    )) if wanted else []
    missing = wanted - {r.name for r in rows}
    if missing:
        raise errors.BadRequest(f"No such trait {', '.join(sorted(missing))}")
    new_gen = _replace(conn, provider, {r.id for r in rows})
    return ProviderTraits(new_gen, [_trait(r) for r in rows])


def clear_provider_traits(conn: Connection, uuid: str) -> None:
    provider = _locked_provider(conn, uuid)
    _replace(conn, provider, set())


def _replace(conn: Connection, provider: sa.Row, want: set[int]) -> int:
    """Make the provider's trait ids ``want``; bump the generation if that changed anything."""
    rpt = s.resource_provider_traits
    have = set(conn.execute(
        sa.select(rpt.c.trait_id).where(rpt.c.resource_provider_id == provider.id)
    ).scalars())
    to_add, to_delete = want - have, have - want
    if not to_add and not to_delete:
        return int(provider.generation)
    if to_delete:
        conn.execute(sa.delete(rpt).where(
            rpt.c.resource_provider_id == provider.id, rpt.c.trait_id.in_(to_delete)
        ))
    if to_add:
        stamp = now()
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(rpt), [
                    {"resource_provider_id": provider.id, "trait_id": tid, "created_at": stamp}
                    for tid in sorted(to_add)
                ])
        except sa.exc.IntegrityError:
            # A trait was deleted after we looked it up.
            raise errors.ConcurrentUpdate(
                "Another process changed the traits being set; please try again."
            ) from None
    new_gen = bump_generation(conn, provider.id, expected=int(provider.generation))
    record_change(conn, [provider.id])
    return new_gen
