"""Quota limits as the API database keeps them, and what a project uses, counted there.

Limits: rows of ``quotas`` (per project), ``project_user_quotas`` (per user within a
project) and ``quota_classes`` (per class), one per resource that was set. Usage: a
project's servers are its instance mappings not queued for delete (a user's: those the
user booted); their cores and RAM are the flavor in each one's request spec
(written in the same transaction as the mapping, and moved to the new flavor when
a resize finishes or back when it is reverted), kept beside the spec's JSON in its
``vcpus`` and ``memory_mb`` columns (:func:`flavor_sizes`) and summed by one
statement. A server buried in cell0 (no host took it) counts as an instance but holds
no cores or RAM, as Placement would say.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.storage import prepared


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class Usage:
    instances: int = 0
    cores: int = 0
    ram: int = 0
    server_groups: int = 0

    def of(self, resource: str) -> int:
        return int(getattr(self, resource, 0))


def flavor_sizes(spec: Mapping[str, Any]) -> dict[str, int]:
    """The ``vcpus`` and ``memory_mb`` columns of a request spec row, from its flavor."""
    flavor = spec.get("flavor")
    flavor = flavor if isinstance(flavor, Mapping) else {}
    return {"vcpus": int(flavor.get("vcpus") or 0),
            "memory_mb": int(flavor.get("memory_mb") or 0)}


def user_limits(conn: Connection, project_id: str, user_id: str) -> dict[str, int]:
    rows = prepared.select(conn, s.project_user_quotas,
                           {"project_id": project_id, "user_id": user_id},
                           ("resource", "hard_limit"))
    return {r.resource: r.hard_limit for r in rows}


@dataclass(frozen=True)
class HeldLimits:
    """The limits set for a quota class, a project and a user in it (each as set: a
    resource missing was not set there)."""

    of_class: dict[str, int]
    of_project: dict[str, int]
    of_user: dict[str, int]


_q, _c, _u = s.quotas, s.quota_classes, s.project_user_quotas
# One statement for the three, built once: a boot reads them on every create.
_HELD = sa.union_all(
    sa.select(sa.literal_column("0").label("scope"), _c.c.resource, _c.c.hard_limit)
    .where(_c.c.class_name == sa.bindparam("class_name")),
    sa.select(sa.literal_column("1"), _q.c.resource, _q.c.hard_limit)
    .where(_q.c.project_id == sa.bindparam("project_id")),
    sa.select(sa.literal_column("2"), _u.c.resource, _u.c.hard_limit)
    .where(_u.c.project_id == sa.bindparam("project_id"),
           _u.c.user_id == sa.bindparam("user_id")))


def held_limits(conn: Connection, class_name: str, project_id: str | None,
                user_id: str | None) -> HeldLimits:
    """The class's, the project's and the user's limits (:func:`class_limits`,
    :func:`user_limits`) in one statement; no project: only the class's, no user: no
    user's."""
    scopes: tuple[dict[str, int], ...] = ({}, {}, {})
    asked = 1 if project_id is None else 2 if user_id is None else 3   # scopes 0..asked-1
    rows = conn.execute(_HELD, {"class_name": class_name, "project_id": project_id or "",
                                "user_id": user_id or ""})
    for scope, resource, limit in rows:
        if scope < asked:
            scopes[scope][resource] = limit
    return HeldLimits(*scopes)


def users_limits(conn: Connection, project_id: str) -> dict[str, int]:
    """Per resource, the sum of the limits given to the project's users (Nova's part of
    the project's quota already handed out)."""
    q = s.project_user_quotas
    rows = conn.execute(sa.select(q.c.resource, sa.func.sum(q.c.hard_limit))
                        .where(q.c.project_id == project_id).group_by(q.c.resource))
    return {resource: int(total) for resource, total in rows}


def class_limits(conn: Connection, class_name: str) -> dict[str, int]:
    rows = prepared.select(conn, s.quota_classes, {"class_name": class_name},
                           ("resource", "hard_limit"))
    return {r.resource: r.hard_limit for r in rows}


def _set(conn: Connection, table: sa.Table, owner: sa.Column, owner_value: str,
         limits: dict[str, int]) -> None:
    """Upsert one row per resource: update first, insert what was not there. Two admins
    setting the same new resource at once: the unique constraint makes one fail."""
    now = utcnow()
    for resource, limit in limits.items():
        where = sa.and_(owner == owner_value, table.c.resource == resource)
        done = conn.execute(sa.update(table).where(where)
                            .values(hard_limit=limit, updated_at=now)).rowcount
        if not done:
            conn.execute(sa.insert(table).values(
                {owner.name: owner_value, "resource": resource, "hard_limit": limit,
                 "created_at": now}))


def set_project_limits(conn: Connection, project_id: str, limits: dict[str, int]) -> None:
    _set(conn, s.quotas, s.quotas.c.project_id, project_id, limits)


def set_user_limits(conn: Connection, project_id: str, user_id: str,
                    limits: dict[str, int]) -> None:
    q = s.project_user_quotas
    now = utcnow()
    for resource, limit in limits.items():
        where = sa.and_(q.c.project_id == project_id, q.c.user_id == user_id,
                        q.c.resource == resource)
        done = conn.execute(sa.update(q).where(where)
                            .values(hard_limit=limit, updated_at=now)).rowcount
        if not done:
            conn.execute(sa.insert(q).values(project_id=project_id, user_id=user_id,
                                             resource=resource, hard_limit=limit,
                                             created_at=now))


def set_class_limits(conn: Connection, class_name: str, limits: dict[str, int]) -> None:
    _set(conn, s.quota_classes, s.quota_classes.c.class_name, class_name, limits)


def delete_project_limits(conn: Connection, project_id: str) -> None:
    """The project's own limits and its users' (Nova's destroy_all_by_project)."""
    conn.execute(sa.delete(s.quotas).where(s.quotas.c.project_id == project_id))
    q = s.project_user_quotas
    conn.execute(sa.delete(q).where(q.c.project_id == project_id))


def delete_user_limits(conn: Connection, project_id: str, user_id: str) -> None:
    q = s.project_user_quotas
    conn.execute(sa.delete(q).where(q.c.project_id == project_id, q.c.user_id == user_id))


def usage(conn: Connection, project_id: str, servers: bool = True,
          user_id: str | None = None) -> Usage:
    """What ``project_id`` (or, given ``user_id``, that user in it) holds now: servers,
    their cores and RAM, server groups. ``servers=False`` leaves the servers uncounted
    (zeros): no limit needs them when they are all unlimited. The servers, cores and RAM
    are one statement's count and sums (a server without a request spec, or buried in
    cell0, holds no cores or RAM)."""
    m, c, r, g = s.instance_mappings, s.cell_mappings, s.request_specs, s.server_groups
    mine = [m.c.project_id == project_id, m.c.queued_for_delete == sa.false()]
    groups_mine = [g.c.project_id == project_id]
    if user_id is not None:
        mine.append(m.c.user_id == user_id)
        groups_mine.append(g.c.user_id == user_id)
    instances = cores = ram = 0
    if servers:
        held = sa.or_(c.c.uuid.is_(None), c.c.uuid != s.CELL0_UUID)

        def total(column: sa.Column[Any]) -> sa.ColumnElement[Any]:
            return sa.func.coalesce(sa.func.sum(sa.case((held, column), else_=0)), 0)

        row = conn.execute(
            sa.select(sa.func.count(m.c.id), total(r.c.vcpus), total(r.c.memory_mb))
            .select_from(m.outerjoin(c, c.c.id == m.c.cell_id)
                         .outerjoin(r, r.c.instance_uuid == m.c.instance_uuid))
            .where(*mine)).one()
        instances, cores, ram = (int(v or 0) for v in row)
    groups = conn.execute(sa.select(sa.func.count()).select_from(g)
                          .where(*groups_mine)).scalar_one()
    return Usage(instances, cores, ram, int(groups))


def group_members(conn: Connection, group_uuid: str) -> int:
    g, gm = s.server_groups, s.server_group_members
    return int(conn.execute(sa.select(sa.func.count()).select_from(
        gm.join(g, g.c.id == gm.c.group_id)).where(g.c.uuid == group_uuid)).scalar_one())


def key_pairs_of(conn: Connection, user_id: str) -> int:
    k = s.key_pairs
    return int(conn.execute(sa.select(sa.func.count()).select_from(k)
                            .where(k.c.user_id == user_id)).scalar_one())
