"""A zone manager's local store: plain functions over one connection (schema.py says what
each table holds)."""

from __future__ import annotations

import datetime as dt
import json
import threading
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.storage import engine as db
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


def accept(conn: Connection, uuid: str, body: dict[str, Any], batch: str | None = None,
           position: int = 0) -> bool:
    """Record a boot before it is acknowledged; False if this uuid was accepted before."""
    if conn.execute(sa.select(s.requests.c.uuid).where(s.requests.c.uuid == uuid)).first():
        return False
    conn.execute(sa.insert(s.requests).values(uuid=uuid, body=json.dumps(body, sort_keys=True),
                                              state=PENDING, created_at=utcnow(),
                                              batch=batch, position=position))
    return True


def batch_of(conn: Connection, batch: str) -> list[str]:
    """The servers (uuids) of one API request, in the order it named them."""
    t = s.requests
    return [r.uuid for r in conn.execute(sa.select(t.c.uuid).where(t.c.batch == batch)
                                         .order_by(t.c.position))]


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
    batch: str | None = None
    updated_at: dt.datetime | None = None


def _request(row: Any) -> Request:
    return Request(row.uuid, json.loads(row.body), row.state,
                   json.loads(row.result) if row.result else {},
                   json.loads(row.plan) if row.plan else None, row.attempt,
                   bool(row.cancelled), row.created_at, row.batch, row.updated_at)


def request(conn: Connection, uuid: str) -> Request | None:
    row = conn.execute(sa.select(s.requests).where(s.requests.c.uuid == uuid)).first()
    return _request(row) if row is not None else None


def pending(conn: Connection) -> list[Request]:
    t = s.requests
    return [_request(row) for row in conn.execute(
        sa.select(t).where(t.c.state == PENDING).order_by(t.c.created_at, t.c.position))]


# ---- where servers are ------------------------------------------------------------------


def locate(conn: Connection, server_uuid: str) -> list[str] | None:
    """The route to the leaf holding a server (None: not one this zone placed)."""
    t = s.server_locations
    row = conn.execute(sa.select(t.c.route).where(t.c.server_uuid == server_uuid)).first()
    return str(row.route).split("/") if row else None


def placement(conn: Connection, server_uuid: str) -> tuple[list[str], str] | None:
    """(route, host) of a server this zone placed (host "" if it found it instead)."""
    t = s.server_locations
    row = conn.execute(sa.select(t.c.route, t.c.host)
                       .where(t.c.server_uuid == server_uuid)).first()
    return (str(row.route).split("/"), str(row.host)) if row else None


def located_in(conn: Connection, project_id: str | None) -> list[dict[str, Any]]:
    """Every server this zone knows the place of (of ``project_id``; None: all):
    ``{"uuid", "zone", "project_id", "created_at"}``, oldest first."""
    t = s.server_locations
    query = sa.select(t).order_by(t.c.created_at)
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    return [{"uuid": r.server_uuid, "zone": str(r.route).rsplit("/", 1)[-1],
             "project_id": r.project_id, "created_at": r.created_at.isoformat()}
            for r in conn.execute(query)]


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


def drop_request(conn: Connection, uuid: str, any_state: bool = False) -> bool:
    """Forget a boot that ended (its user deleted the server); ``any_state``: one in
    flight too (a request refused before it was acknowledged)."""
    t = s.requests
    query = sa.delete(t).where(t.c.uuid == uuid)
    if not any_state:
        query = query.where(t.c.state != PENDING)
    return bool(conn.execute(query).rowcount)


def unplaced(conn: Connection, project_id: str | None) -> list[Request]:
    """Boots the origin shows itself: in flight (wherever their try is), or failed
    before any leaf kept them, and not deleted by their user."""
    t = s.requests
    found = [_request(row) for row in conn.execute(
        sa.select(t).where(t.c.state != DONE).order_by(t.c.created_at, t.c.position))]
    return [r for r in found if not r.cancelled
            and (project_id is None or r.body.get("project_id") == project_id)]


def located_set(conn: Connection, uuids: list[str]) -> set[str]:
    """Which of ``uuids`` a leaf holds now (as this zone knows)."""
    t = s.server_locations
    return {r.server_uuid for r in conn.execute(
        sa.select(t.c.server_uuid).where(t.c.server_uuid.in_(uuids)))}


def count_placed(conn: Connection) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(s.server_locations))
               .scalar_one())


# ---- replay memory ----------------------------------------------------------------------


class SeenInStore:
    """The ids of signed requests this zone accepted, kept in its store for the freshness
    window (:class:`stratus.zones.signing.SeenMessages`): a replay is refused across a
    restart too. Old ids are pruned at most every few seconds."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self._next_prune = 0.0

    def remember(self, receiver: str, msg_id: str, sent_at: float, horizon: float) -> bool:
        t = s.seen_messages
        prune = False
        with self._lock:
            if horizon >= self._next_prune:
                prune, self._next_prune = True, horizon + 5.0
        try:
            with db.write(self.engine) as conn:
                if prune:
                    conn.execute(sa.delete(t).where(t.c.sent_at < horizon))
                conn.execute(sa.insert(t).values(receiver=receiver[:255], msg_id=msg_id[:64],
                                                 sent_at=sent_at))
        except sa.exc.IntegrityError:
            return False
        return True
