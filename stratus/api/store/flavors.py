"""Flavors and their extra specs (API database)."""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.errors import Conflict, NotFound


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class Flavor:
    id: int
    flavorid: str
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int
    ephemeral_gb: int
    swap: int
    is_public: bool
    description: str | None
    extra_specs: dict[str, str] = field(default_factory=dict)
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None


def _specs(conn: Connection, ids: list[int]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {i: {} for i in ids}
    if not ids:
        return out
    t = s.flavor_extra_specs
    for row in conn.execute(sa.select(t).where(t.c.flavor_id.in_(ids))
                            .order_by(t.c.flavor_id, t.c.key)):
        out[row.flavor_id][row.key] = row.value
    return out


def _from_row(row: sa.Row, specs: dict[str, str]) -> Flavor:
    return Flavor(row.id, row.flavorid, row.name, row.vcpus, row.memory_mb, row.root_gb,
                  row.ephemeral_gb, row.swap, bool(row.is_public), row.description,
                  dict(specs), row.created_at, row.updated_at)


def get(conn: Connection, flavorid: str) -> Flavor:
    row = conn.execute(sa.select(s.flavors).where(s.flavors.c.flavorid == flavorid)).first()
    if row is None:
        raise NotFound(f"Flavor {flavorid} could not be found.")
    return _from_row(row, _specs(conn, [row.id])[row.id])


def list_all(conn: Connection, *, is_public: bool | None = True, min_ram: int = 0,
             min_disk: int = 0) -> list[Flavor]:
    t = s.flavors
    query = sa.select(t).where(t.c.memory_mb >= min_ram, t.c.root_gb >= min_disk)
    if is_public is not None:
        query = query.where(t.c.is_public == is_public)
    rows = list(conn.execute(query.order_by(t.c.flavorid)))
    specs = _specs(conn, [r.id for r in rows])
    return [_from_row(r, specs[r.id]) for r in rows]


def create(conn: Connection, *, name: str, vcpus: int, memory_mb: int, root_gb: int,
           ephemeral_gb: int = 0, swap: int = 0, flavorid: str | None = None,
           is_public: bool = True, description: str | None = None) -> Flavor:
    t = s.flavors
    flavorid = flavorid or str(uuidlib.uuid4())
    if conn.execute(sa.select(t.c.id).where(t.c.name == name)).first():
        raise Conflict(f"Flavor with name {name} already exists.")
    if conn.execute(sa.select(t.c.id).where(t.c.flavorid == flavorid)).first():
        raise Conflict(f"Flavor with ID {flavorid} already exists.")
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(t).values(
                flavorid=flavorid, name=name, vcpus=vcpus, memory_mb=memory_mb,
                root_gb=root_gb, ephemeral_gb=ephemeral_gb, swap=swap, is_public=is_public,
                description=description, created_at=utcnow()))
    except sa.exc.IntegrityError:
        # A concurrent create took the name or id between our check and the insert.
        raise Conflict(f"Flavor with name {name} or ID {flavorid} already exists.") from None
    return get(conn, flavorid)


def update_description(conn: Connection, flavorid: str, description: str | None) -> Flavor:
    flavor = get(conn, flavorid)
    conn.execute(sa.update(s.flavors).where(s.flavors.c.id == flavor.id)
                 .values(description=description, updated_at=utcnow()))
    return get(conn, flavorid)


def delete(conn: Connection, flavorid: str) -> None:
    flavor = get(conn, flavorid)
    conn.execute(sa.delete(s.flavor_extra_specs)
                 .where(s.flavor_extra_specs.c.flavor_id == flavor.id))
    conn.execute(sa.delete(s.flavors).where(s.flavors.c.id == flavor.id))


def set_extra_specs(conn: Connection, flavorid: str, specs: Mapping[str, str]) -> Flavor:
    """Create or overwrite the given keys; others stay."""
    flavor = get(conn, flavorid)
    t = s.flavor_extra_specs
    for key, value in specs.items():
        if key in flavor.extra_specs:
            conn.execute(sa.update(t).where(t.c.flavor_id == flavor.id, t.c.key == key)
                         .values(value=value))
        else:
            conn.execute(sa.insert(t).values(flavor_id=flavor.id, key=key, value=value))
    conn.execute(sa.update(s.flavors).where(s.flavors.c.id == flavor.id)
                 .values(updated_at=utcnow()))
    return get(conn, flavorid)


def delete_extra_spec(conn: Connection, flavorid: str, key: str) -> None:
    flavor = get(conn, flavorid)
    if key not in flavor.extra_specs:
        raise NotFound(f"Flavor {flavorid} has no extra specs with key {key}.")
    t = s.flavor_extra_specs
    conn.execute(sa.delete(t).where(t.c.flavor_id == flavor.id, t.c.key == key))
