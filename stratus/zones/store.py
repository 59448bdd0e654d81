"""A zone manager's local store: plain functions over one connection (schema.py says what
each table holds)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.zones import schema as s
from stratus.zones.capabilities import Capabilities, CapabilityError

PENDING, DONE, FAILED = "pending", "done", "failed"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class NoSuchChild(KeyError):
    pass


@dataclass(frozen=True)
class Child:
    name: str
    capabilities: Capabilities | None
    received_at: float | None

    def fresh(self, now: float, ttl: float) -> bool:
        return self.received_at is not None and now - self.received_at <= ttl


# ---- children ---------------------------------------------------------------------------


def add_child(conn: Connection, name: str) -> bool:
    """Register a child zone; False if it already was."""
    if conn.execute(sa.select(s.children.c.name).where(s.children.c.name == name)).first():
        return False
    conn.execute(sa.insert(s.children).values(name=name, created_at=utcnow()))
    return True


def remove_child(conn: Connection, name: str) -> bool:
    return bool(conn.execute(sa.delete(s.children).where(s.children.c.name == name)).rowcount)


def _child(row: Any) -> Child:
    caps = None
    if row.capabilities:
        try:
            caps = Capabilities.from_dict(json.loads(row.capabilities))
        except (CapabilityError, ValueError):
            caps = None
    return Child(row.name, caps, row.received_at)


def children(conn: Connection) -> list[Child]:
    return [_child(r) for r in conn.execute(sa.select(s.children).order_by(s.children.c.name))]


def save_capabilities(conn: Connection, name: str, caps: Capabilities, now: float) -> None:
    """A registered child's latest post (NoSuchChild for one that is not)."""
    written = conn.execute(sa.update(s.children).where(s.children.c.name == name).values(
        capabilities=json.dumps(caps.to_dict(), sort_keys=True), received_at=now,
        updated_at=utcnow()))
    if not written.rowcount:
        raise NoSuchChild(name)


# ---- requests (the boots this zone is the origin of) -------------------------------------


def accept(conn: Connection, uuid: str, body: dict[str, Any]) -> bool:
    """Record a boot before it is acknowledged; False if this uuid was accepted before."""
    if conn.execute(sa.select(s.requests.c.uuid).where(s.requests.c.uuid == uuid)).first():
        return False
    conn.execute(sa.insert(s.requests).values(uuid=uuid, body=json.dumps(body, sort_keys=True),
                                              state=PENDING, created_at=utcnow()))
    return True


def finish(conn: Connection, uuid: str, state: str, result: dict[str, Any]) -> None:
    conn.execute(sa.update(s.requests).where(s.requests.c.uuid == uuid).values(
        state=state, result=json.dumps(result, sort_keys=True), updated_at=utcnow()))


def plan(conn: Connection, uuid: str, hosts: list[dict[str, Any]],
         reasons: list[str]) -> None:
    """The ranked hosts a boot will try, and what selecting them left out."""
    conn.execute(sa.update(s.requests).where(s.requests.c.uuid == uuid).values(
        plan=json.dumps(hosts, sort_keys=True), attempt=0,
        result=json.dumps({"reasons": reasons}), updated_at=utcnow()))


def attempt(conn: Connection, uuid: str, index: int, reasons: list[str]) -> None:
    conn.execute(sa.update(s.requests).where(s.requests.c.uuid == uuid).values(
        attempt=index, result=json.dumps({"reasons": reasons}), updated_at=utcnow()))


def cancel(conn: Connection, uuid: str) -> bool:
    """Mark a pending boot cancelled (its server is deleted once built); False if it is
    not pending."""
    return bool(conn.execute(sa.update(s.requests).where(
        s.requests.c.uuid == uuid, s.requests.c.state == PENDING).values(
        cancelled=True, updated_at=utcnow())).rowcount)


def is_cancelled(conn: Connection, uuid: str) -> bool:
    return bool(conn.execute(sa.select(s.requests.c.cancelled).where(
        s.requests.c.uuid == uuid)).scalar())


@dataclass(frozen=True)
class Request:
    uuid: str
    body: dict[str, Any]
    state: str
    result: dict[str, Any]
    plan: list[dict[str, Any]] | None
    attempt: int
    cancelled: bool
    created_at: dt.datetime


def request(conn: Connection, uuid: str) -> Request | None:
    row = conn.execute(sa.select(s.requests).where(s.requests.c.uuid == uuid)).first()
    if row is None:
        return None
    return Request(row.uuid, json.loads(row.body), row.state,
                   json.loads(row.result) if row.result else {},
                   json.loads(row.plan) if row.plan else None, row.attempt,
                   bool(row.cancelled), row.created_at)


def pending(conn: Connection) -> list[Request]:
    rows = conn.execute(sa.select(s.requests.c.uuid).where(s.requests.c.state == PENDING))
    return [r for r in (request(conn, row.uuid) for row in rows) if r is not None]


# ---- where servers are ------------------------------------------------------------------


def locate(conn: Connection, server_uuid: str) -> list[str] | None:
    """The route to the leaf holding a server (None: not one this zone placed)."""
    t = s.server_locations
    row = conn.execute(sa.select(t.c.route).where(t.c.server_uuid == server_uuid)).first()
    return str(row.route).split("/") if row else None


def place(conn: Connection, server_uuid: str, route: list[str], host: str,
          project_id: str) -> None:
    """Where a server went: ``route`` from the child of this zone down to the leaf."""
    conn.execute(sa.insert(s.server_locations).values(
        server_uuid=server_uuid, route="/".join(route), host=host, project_id=project_id,
        created_at=utcnow()))


def forget(conn: Connection, server_uuid: str) -> None:
    conn.execute(sa.delete(s.server_locations).where(
        s.server_locations.c.server_uuid == server_uuid))


def located(conn: Connection, project_id: str | None) -> dict[str, list[str]]:
    """route ("child/.../leaf") -> the uuids of its servers (of ``project_id``; None:
    all)."""
    t = s.server_locations
    query = sa.select(t.c.route, t.c.server_uuid).order_by(t.c.created_at)
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    out: dict[str, list[str]] = {}
    for route, uuid in conn.execute(query):
        out.setdefault(route, []).append(uuid)
    return out


def drop_request(conn: Connection, uuid: str) -> bool:
    """Forget a boot that ended without a server (its user deleted it)."""
    return bool(conn.execute(sa.delete(s.requests).where(
        s.requests.c.uuid == uuid, s.requests.c.state != PENDING)).rowcount)


def unplaced(conn: Connection, project_id: str | None) -> list[Request]:
    """Boots not (yet) on a host: pending, or failed and not deleted by their user."""
    rows = conn.execute(sa.select(s.requests.c.uuid).where(s.requests.c.state != DONE)
                        .order_by(s.requests.c.created_at))
    found = [r for r in (request(conn, row.uuid) for row in rows) if r is not None]
    return [r for r in found if not r.cancelled
            and (project_id is None or r.body.get("project_id") == project_id)]


def count_placed(conn: Connection) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(s.server_locations))
               .scalar_one())
