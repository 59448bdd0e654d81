"""Server groups (API database): a policy and the servers that follow it."""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.errors import NotFound

POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class ServerGroup:
    id: int
    uuid: str
    name: str
    policy: str
    max_server_per_host: int | None
    project_id: str
    user_id: str
    members: tuple[str, ...]
    created_at: dt.datetime


def _members(conn: Connection, ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {i: [] for i in ids}
    if ids:
        t = s.server_group_members
        for row in conn.execute(sa.select(t).where(t.c.group_id.in_(ids))
                                .order_by(t.c.instance_uuid)):
            out[row.group_id].append(row.instance_uuid)
    return out


def _from_row(row: sa.Row, members: list[str]) -> ServerGroup:
    return ServerGroup(row.id, row.uuid, row.name, row.policy, row.max_server_per_host,
                       row.project_id, row.user_id, tuple(members), row.created_at)


def get(conn: Connection, uuid: str) -> ServerGroup:
    row = conn.execute(sa.select(s.server_groups).where(s.server_groups.c.uuid == uuid)).first()
    if row is None:
        raise NotFound(f"Instance group {uuid} could not be found.")
    return _from_row(row, _members(conn, [row.id])[row.id])


def list_all(conn: Connection, project_id: str | None) -> list[ServerGroup]:
    """Groups of ``project_id`` (None: every project's)."""
    t = s.server_groups
    query = sa.select(t).order_by(t.c.id)
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    rows = list(conn.execute(query))
    members = _members(conn, [r.id for r in rows])
    return [_from_row(r, members[r.id]) for r in rows]


def create(conn: Connection, *, name: str, policy: str, project_id: str, user_id: str,
           max_server_per_host: int | None = None, uuid: str | None = None) -> ServerGroup:
    """A new group (``uuid``: a zone tree's leaf keeps its top's group under its id)."""
    uuid = uuid or str(uuidlib.uuid4())
    conn.execute(sa.insert(s.server_groups).values(
        uuid=uuid, name=name, policy=policy, max_server_per_host=max_server_per_host,
        project_id=project_id, user_id=user_id, created_at=utcnow()))
    return get(conn, uuid)


def delete(conn: Connection, uuid: str) -> None:
    group = get(conn, uuid)
    conn.execute(sa.delete(s.server_group_members)
                 .where(s.server_group_members.c.group_id == group.id))
    conn.execute(sa.delete(s.server_groups).where(s.server_groups.c.id == group.id))


def add_members(conn: Connection, uuid: str, instance_uuids: Iterable[str]) -> None:
    group = get(conn, uuid)
    new = [u for u in dict.fromkeys(instance_uuids) if u not in group.members]
    if new:
        conn.execute(sa.insert(s.server_group_members),
                     [{"group_id": group.id, "instance_uuid": u} for u in new])


def remove_member(conn: Connection, instance_uuid: str) -> None:
    """Drop a deleted server from whatever group it was in."""
    conn.execute(sa.delete(s.server_group_members)
                 .where(s.server_group_members.c.instance_uuid == instance_uuid))


def group_of(conn: Connection, instance_uuid: str) -> ServerGroup | None:
    t = s.server_group_members
    uuid = conn.execute(
        sa.select(s.server_groups.c.uuid)
        .join(t, t.c.group_id == s.server_groups.c.id)
        .where(t.c.instance_uuid == instance_uuid)).scalar()
    return get(conn, uuid) if uuid else None
