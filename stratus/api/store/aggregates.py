"""Host aggregates and availability zones (API database).

An availability zone is an aggregate whose metadata has ``availability_zone``;
a host belongs to at most one zone, and a host in no zone is in the default
zone (``[DEFAULT] default_availability_zone``, "nova"). The aggregate's uuid is
also the Placement aggregate that its hosts' compute-node providers are put in
(the operations layer does that part).
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.errors import BadRequest, Conflict, NotFound

AZ_KEY = "availability_zone"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class Aggregate:
    id: int
    uuid: str
    name: str
    hosts: tuple[str, ...]
    metadata: dict[str, str]
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @property
    def availability_zone(self) -> str | None:
        return self.metadata.get(AZ_KEY)


def _load(conn: Connection, rows: list[sa.Row]) -> list[Aggregate]:
    ids = [r.id for r in rows]
    hosts: dict[int, list[str]] = {i: [] for i in ids}
    meta: dict[int, dict[str, str]] = {i: {} for i in ids}
    if ids:
        h, m = s.aggregate_hosts, s.aggregate_metadata
        for row in conn.execute(sa.select(h).where(h.c.aggregate_id.in_(ids))
                                .order_by(h.c.host)):
            hosts[row.aggregate_id].append(row.host)
        for row in conn.execute(sa.select(m).where(m.c.aggregate_id.in_(ids))):
            meta[row.aggregate_id][row.key] = row.value
    return [Aggregate(r.id, r.uuid, r.name, tuple(hosts[r.id]), meta[r.id], r.created_at,
                      r.updated_at) for r in rows]


def get(conn: Connection, ident: int | str) -> Aggregate:
    """An aggregate by its integer id (the API's) or its uuid."""
    t = s.aggregates
    col = t.c.id if isinstance(ident, int) else t.c.uuid
    row = conn.execute(sa.select(t).where(col == ident)).first()
    if row is None:
        raise NotFound(f"Aggregate {ident} could not be found.")
    return _load(conn, [row])[0]


def list_all(conn: Connection) -> list[Aggregate]:
    return _load(conn, list(conn.execute(sa.select(s.aggregates).order_by(s.aggregates.c.id))))


def _check_name_free(conn: Connection, name: str, but: int | None = None) -> None:
    t = s.aggregates
    query = sa.select(t.c.id).where(t.c.name == name)
    if but is not None:
        query = query.where(t.c.id != but)
    if conn.execute(query).first():
        raise Conflict(f"Aggregate {name} already exists.")


def create(conn: Connection, name: str, availability_zone: str | None = None) -> Aggregate:
    _check_name_free(conn, name)
    uuid = str(uuidlib.uuid4())
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(s.aggregates).values(uuid=uuid, name=name,
                                                        created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise Conflict(f"Aggregate {name} already exists.") from None
    agg = get(conn, uuid)
    if availability_zone is not None:
        agg = set_metadata(conn, agg.id, {AZ_KEY: availability_zone})
    return agg


def update(conn: Connection, agg_id: int, *, name: str | None = None,
           availability_zone: str | None = None) -> Aggregate:
    agg = get(conn, agg_id)
    if name is not None and name != agg.name:
        _check_name_free(conn, name, but=agg.id)
        conn.execute(sa.update(s.aggregates).where(s.aggregates.c.id == agg.id)
                     .values(name=name, updated_at=utcnow()))
    if availability_zone is not None:
        return set_metadata(conn, agg.id, {AZ_KEY: availability_zone})
    return get(conn, agg.id)


def delete(conn: Connection, agg_id: int) -> Aggregate:
    agg = get(conn, agg_id)
    if agg.hosts:
        raise BadRequest(f"Cannot delete aggregate {agg.name}: it still has host(s) "
                         f"{', '.join(agg.hosts)}; remove them first.")
    conn.execute(sa.delete(s.aggregate_metadata)
                 .where(s.aggregate_metadata.c.aggregate_id == agg.id))
    conn.execute(sa.delete(s.aggregates).where(s.aggregates.c.id == agg.id))
    return agg


def host_zones(conn: Connection) -> dict[str, str]:
    """host -> availability zone, for hosts in a zone."""
    h, m = s.aggregate_hosts, s.aggregate_metadata
    rows = conn.execute(sa.select(h.c.host, m.c.value)
                        .join(m, m.c.aggregate_id == h.c.aggregate_id)
                        .where(m.c.key == AZ_KEY))
    return {r.host: r.value for r in rows}


def zone_names(conn: Connection) -> set[str]:
    m = s.aggregate_metadata
    return {r.value for r in conn.execute(sa.select(m.c.value).where(m.c.key == AZ_KEY))}


def _zones_of(conn: Connection, hosts: list[str], but: int) -> dict[str, str]:
    """The zones ``hosts`` are in through aggregates other than ``but``."""
    h, m = s.aggregate_hosts, s.aggregate_metadata
    if not hosts:
        return {}
    rows = conn.execute(sa.select(h.c.host, m.c.value)
                        .join(m, m.c.aggregate_id == h.c.aggregate_id)
                        .where(m.c.key == AZ_KEY, h.c.host.in_(hosts),
                               h.c.aggregate_id != but))
    return {r.host: r.value for r in rows}


def add_host(conn: Connection, agg_id: int, host: str) -> Aggregate:
    agg = get(conn, agg_id)
    if host in agg.hosts:
        raise Conflict(f"Aggregate {agg.name} already has host {host}.")
    zone = agg.availability_zone
    other = _zones_of(conn, [host], agg.id).get(host)
    if zone is not None and other is not None and other != zone:
        raise Conflict(f"Cannot add host {host} to aggregate {agg.name}: the host is "
                       f"already in availability zone {other}, the aggregate is in {zone}.")
    conn.execute(sa.insert(s.aggregate_hosts).values(aggregate_id=agg.id, host=host))
    conn.execute(sa.update(s.aggregates).where(s.aggregates.c.id == agg.id)
                 .values(updated_at=utcnow()))
    return get(conn, agg.id)


def remove_host(conn: Connection, agg_id: int, host: str) -> Aggregate:
    agg = get(conn, agg_id)
    if host not in agg.hosts:
        raise NotFound(f"Cannot remove host {host} from aggregate {agg.name}: "
                       "it is not in the aggregate.")
    h = s.aggregate_hosts
    conn.execute(sa.delete(h).where(h.c.aggregate_id == agg.id, h.c.host == host))
    return get(conn, agg.id)


def remove_host_everywhere(conn: Connection, host: str) -> list[Aggregate]:
    """Take ``host`` out of every aggregate (its service is being deleted)."""
    h = s.aggregate_hosts
    ids = [r.aggregate_id for r in conn.execute(sa.select(h.c.aggregate_id)
                                                .where(h.c.host == host))]
    conn.execute(sa.delete(h).where(h.c.host == host))
    return [get(conn, i) for i in ids]


def set_metadata(conn: Connection, agg_id: int, metadata: Mapping[str, str | None]) -> Aggregate:
    """Set keys (None deletes a key). A zone change must not split a host across zones."""
    agg = get(conn, agg_id)
    if AZ_KEY in metadata and metadata[AZ_KEY] is not None:
        zone = metadata[AZ_KEY]
        clash = {h: z for h, z in _zones_of(conn, list(agg.hosts), agg.id).items() if z != zone}
        if clash:
            host, other = sorted(clash.items())[0]
            raise BadRequest(f"Cannot set availability zone {zone} on aggregate {agg.name}: "
                             f"its host {host} is already in availability zone {other}.")
    m = s.aggregate_metadata
    for key, value in metadata.items():
        conn.execute(sa.delete(m).where(m.c.aggregate_id == agg.id, m.c.key == key))
        if value is not None:
            conn.execute(sa.insert(m).values(aggregate_id=agg.id, key=key, value=value))
    conn.execute(sa.update(s.aggregates).where(s.aggregates.c.id == agg.id)
                 .values(updated_at=utcnow()))
    return get(conn, agg.id)
