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
from stratus.storage import prepared


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
    rxtx_factor: float = 1.0


def _specs(conn: Connection, ids: list[int]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {i: {} for i in ids}
    if not ids:
        return out
    for row in prepared.select(conn, s.flavor_extra_specs, {"flavor_id": ids},
                               order_by=("flavor_id", "key")):
        out[row.flavor_id][row.key] = row.value
    return out


def _from_row(row: sa.Row, specs: dict[str, str]) -> Flavor:
    return Flavor(row.id, row.flavorid, row.name, row.vcpus, row.memory_mb, row.root_gb,
                  row.ephemeral_gb, row.swap, bool(row.is_public), row.description,
                  dict(specs), row.created_at, row.updated_at, row.rxtx_factor)


# A flavor and its extra specs in one statement (a row per spec; one with NULLs for a
# flavor without any): every boot reads its flavor, and a second statement for the specs
# was a round trip of the API and of the database per boot. Unordered: the specs are
# sorted here, since an ORDER BY over the join's TEXT columns made MariaDB build a
# temporary table on disk and sort it, for every boot.
_f, _e = s.flavors, s.flavor_extra_specs
_WITH_SPECS = (sa.select(_f, _e.c.key.label("spec_key"), _e.c.value.label("spec_value"))
               .select_from(_f.outerjoin(_e, _e.c.flavor_id == _f.c.id))
               .where(_f.c.flavorid == sa.bindparam("flavorid")))


def get(conn: Connection, flavorid: str) -> Flavor:
    rows = conn.execute(_WITH_SPECS, {"flavorid": flavorid}).all()
    if not rows:
        raise NotFound(f"Flavor {flavorid} could not be found.")
    # A spec's value is never NULL: a NULL key is the outer join's row of no spec.
    return _from_row(rows[0], dict(sorted((r.spec_key, r.spec_value) for r in rows
                                          if r.spec_key is not None)))


def internal_ids(conn: Connection, flavorids: set[str]) -> dict[str, int]:
    """flavor id -> the row's id (Nova's ``instance_type_id``), for those that exist."""
    f = s.flavors
    rows = conn.execute(sa.select(f.c.flavorid, f.c.id).where(f.c.flavorid.in_(flavorids)))
    return {r.flavorid: r.id for r in rows}


# The sort keys Nova takes for flavors, and the column behind each.
SORT_KEYS = {"created_at": "created_at", "description": "description",
             "ephemeral_gb": "ephemeral_gb", "flavorid": "flavorid", "id": "id",
             "is_public": "is_public", "memory_mb": "memory_mb", "name": "name",
             "root_gb": "root_gb", "swap": "swap", "updated_at": "updated_at",
             "vcpus": "vcpus"}


def list_all(conn: Connection, *, is_public: bool | None = True, min_ram: int = 0,
             min_disk: int = 0, project_id: str | None = None, sort_key: str = "flavorid",
             sort_dir: str = "asc", limit: int | None = None,
             marker: str | None = None) -> list[Flavor]:
    """Flavors by Nova's rules: ``is_public`` True also finds the private flavors
    ``project_id`` has access to, None finds all; ordered by ``sort_key`` then id, the
    page after the flavor ``marker`` (NotFound if there is no such flavor)."""
    t = s.flavors
    query = sa.select(t).where(t.c.memory_mb >= min_ram, t.c.root_gb >= min_disk)
    if is_public is not None:
        clause: sa.ColumnElement[bool] = t.c.is_public == is_public
        if is_public and project_id is not None:
            p = s.flavor_projects
            clause = sa.or_(clause, t.c.id.in_(sa.select(p.c.flavor_id)
                                               .where(p.c.project_id == project_id)))
        query = query.where(clause)
    column, tie = t.c[SORT_KEYS[sort_key]], t.c.id
    descending = sort_dir == "desc"
    if marker is not None:
        row = conn.execute(sa.select(t).where(t.c.flavorid == marker)).first()
        if row is None:
            raise NotFound(f"marker [{marker}] not found")
        value = getattr(row, column.name)
        after = (column < value) if descending else (column > value)
        query = query.where(sa.or_(after, sa.and_(column == value, tie > row.id)))
    query = query.order_by(column.desc() if descending else column.asc(), tie.asc())
    if limit is not None:
        query = query.limit(limit)
    rows = list(conn.execute(query))
    specs = _specs(conn, [r.id for r in rows])
    return [_from_row(r, specs[r.id]) for r in rows]


def projects(conn: Connection, flavor: Flavor) -> list[str]:
    """The projects with access to a (private) flavor."""
    p = s.flavor_projects
    return [r.project_id for r in conn.execute(
        sa.select(p.c.project_id).where(p.c.flavor_id == flavor.id).order_by(p.c.project_id))]


def has_access(conn: Connection, flavor: Flavor, project_id: str) -> bool:
    return flavor.is_public or project_id in projects(conn, flavor)


def add_access(conn: Connection, flavor: Flavor, project_id: str) -> None:
    if project_id in projects(conn, flavor):
        raise Conflict(f"Flavor access already exists for flavor {flavor.flavorid} and "
                       f"project {project_id} combination.")
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(s.flavor_projects).values(
                flavor_id=flavor.id, project_id=project_id, created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise Conflict(f"Flavor access already exists for flavor {flavor.flavorid} and "
                       f"project {project_id} combination.") from None


def remove_access(conn: Connection, flavor: Flavor, project_id: str) -> None:
    p = s.flavor_projects
    gone = conn.execute(sa.delete(p).where(p.c.flavor_id == flavor.id,
                                           p.c.project_id == project_id)).rowcount
    if not gone:
        raise NotFound(f"Flavor access not found for {flavor.flavorid} / {project_id} "
                       "combination.")


def create(conn: Connection, *, name: str, vcpus: int, memory_mb: int, root_gb: int,
           ephemeral_gb: int = 0, swap: int = 0, flavorid: str | None = None,
           is_public: bool = True, description: str | None = None,
           rxtx_factor: float = 1.0) -> Flavor:
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
                description=description, rxtx_factor=rxtx_factor, created_at=utcnow()))
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
    conn.execute(sa.delete(s.flavor_projects)
                 .where(s.flavor_projects.c.flavor_id == flavor.id))
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
