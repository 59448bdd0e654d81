"""Service records in a cell database: heartbeats, disabling, forcing down.

``is_up`` is the service group rule: a service is up if it reported within
``service_down_time`` seconds and is not forced down. Disabling is only a
flag here; telling the compute (and so Placement) is the API's job
(design document 000).
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Collection
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as s

DEFAULT_SERVICE_DOWN_TIME = 60


class ServiceNotFound(LookupError):
    pass


@dataclass(frozen=True)
class Service:
    id: int
    uuid: str
    host: str
    binary: str
    disabled: bool
    disabled_reason: str | None
    forced_down: bool
    last_seen_up: dt.datetime | None
    version: int
    report_count: int
    created_at: dt.datetime
    updated_at: dt.datetime | None

    def is_up(self, now: dt.datetime, down_time: int = DEFAULT_SERVICE_DOWN_TIME) -> bool:
        if self.forced_down or self.last_seen_up is None:
            return False
        return (now - self.last_seen_up).total_seconds() <= down_time


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _from_row(row: sa.Row) -> Service:
    return Service(row.id, row.uuid, row.host, row.binary, bool(row.disabled),
                   row.disabled_reason, bool(row.forced_down), row.last_seen_up, row.version,
                   row.report_count, row.created_at, row.updated_at)


def register(conn: Connection, host: str, binary: str, version: int,
             now: dt.datetime | None = None) -> Service:
    """Create the service record on first start, or record the version of a restart."""
    now = now or utcnow()
    row = conn.execute(sa.select(s.services).where(
        s.services.c.host == host, s.services.c.binary == binary)).first()
    if row is None:
        conn.execute(sa.insert(s.services).values(
            uuid=str(uuidlib.uuid4()), host=host, binary=binary, topic=binary,
            version=version, last_seen_up=now, created_at=now))
    else:
        conn.execute(sa.update(s.services).where(s.services.c.id == row.id).values(
            version=version, last_seen_up=now, updated_at=now))
    return get_by_host(conn, host, binary)


def heartbeat(conn: Connection, service_id: int, now: dt.datetime | None = None) -> bool:
    """Record that the service reported now; False if its record is gone."""
    now = now or utcnow()
    return bool(conn.execute(sa.update(s.services).where(s.services.c.id == service_id).values(
        last_seen_up=now, report_count=s.services.c.report_count + 1)).rowcount)


def heartbeat_hosts(conn: Connection, hosts: Collection[str], binary: str,
                    now: dt.datetime | None = None) -> int:
    """One heartbeat for the ``binary`` services of many hosts in one statement (a
    process simulating many hosts); how many records were there."""
    if not hosts:
        return 0
    now = now or utcnow()
    return int(conn.execute(sa.update(s.services).where(
        s.services.c.host.in_(sorted(hosts)), s.services.c.binary == binary).values(
        last_seen_up=now, report_count=s.services.c.report_count + 1)).rowcount)


def get_by_host(conn: Connection, host: str, binary: str = "stratus-compute") -> Service:
    row = conn.execute(sa.select(s.services).where(
        s.services.c.host == host, s.services.c.binary == binary)).first()
    if row is None:
        raise ServiceNotFound(f"no {binary} service on host {host}")
    return _from_row(row)


def get(conn: Connection, ident: str | int) -> Service:
    """A service by id or uuid."""
    col = s.services.c.uuid if isinstance(ident, str) else s.services.c.id
    row = conn.execute(sa.select(s.services).where(col == ident)).first()
    if row is None:
        raise ServiceNotFound(f"service {ident} not found")
    return _from_row(row)


def list_all(conn: Connection, host: str | None = None,
             binary: str | None = None, hosts: Collection[str] | None = None
             ) -> list[Service]:
    """The services, by id; ``host`` or ``hosts`` keep only those on these hosts."""
    query = sa.select(s.services).order_by(s.services.c.id)
    if host:
        query = query.where(s.services.c.host == host)
    if hosts is not None:
        query = query.where(s.services.c.host.in_(sorted(hosts)))
    if binary:
        query = query.where(s.services.c.binary == binary)
    return [_from_row(r) for r in conn.execute(query)]


def update(conn: Connection, service_id: int, *, disabled: bool | None = None,
           disabled_reason: str | None = None, forced_down: bool | None = None) -> Service:
    values: dict[str, object] = {"updated_at": utcnow()}
    if disabled is not None:
        values["disabled"] = disabled
        # Enabling clears the reason; disabling records it (possibly None).
        values["disabled_reason"] = disabled_reason if disabled else None
    if forced_down is not None:
        values["forced_down"] = forced_down
    conn.execute(sa.update(s.services).where(s.services.c.id == service_id).values(**values))
    return get(conn, service_id)


def delete(conn: Connection, service_id: int) -> None:
    conn.execute(sa.update(s.compute_nodes).where(s.compute_nodes.c.service_id == service_id)
                 .values(service_id=None))
    conn.execute(sa.delete(s.services).where(s.services.c.id == service_id))
