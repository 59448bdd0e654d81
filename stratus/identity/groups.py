"""Groups of users (in a domain) and who belongs to them; a group's role assignments
count for every member (``assignments.py``). Plain functions over a connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import assignments
from stratus.identity import schema as s
from stratus.identity.model import DOMAIN_ID, IdentityConflict
from stratus.identity.store import new_id, utcnow

NAME_MAX = 64


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    domain_id: str = DOMAIN_ID
    description: str = ""


def _group(row: Any) -> Group:
    return Group(row.id, row.name, row.domain_id, row.description)


def _taken(conn: Connection, name: str, domain_id: str, other_than: str | None = None) -> bool:
    g = s.groups
    row = conn.execute(sa.select(g.c.id).where(g.c.name == name, g.c.domain_id == domain_id)
                       ).first()
    return row is not None and row.id != other_than


def create(conn: Connection, name: str, domain_id: str = DOMAIN_ID, description: str = ""
           ) -> Group:
    if _taken(conn, name, domain_id):
        raise IdentityConflict(f"a group named {name!r} already exists in domain {domain_id}")
    group = Group(new_id(), name, domain_id, description)
    try:
        conn.execute(sa.insert(s.groups).values(id=group.id, name=name, domain_id=domain_id,
                                                description=description, created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise IdentityConflict(f"a group named {name!r} already exists") from None
    return group


def get(conn: Connection, group_id: str) -> Group | None:
    row = conn.execute(sa.select(s.groups).where(s.groups.c.id == group_id)).first()
    return _group(row) if row else None


def listing(conn: Connection, *, name: str | None = None, domain_id: str | None = None,
            user_id: str | None = None) -> list[Group]:
    g, m = s.groups, s.group_members
    query = sa.select(g).order_by(g.c.name)
    if name is not None:
        query = query.where(g.c.name == name)
    if domain_id is not None:
        query = query.where(g.c.domain_id == domain_id)
    if user_id is not None:
        query = query.where(g.c.id.in_(sa.select(m.c.group_id).where(m.c.user_id == user_id)))
    return [_group(r) for r in conn.execute(query)]


def update(conn: Connection, group: Group, **values: Any) -> Group:
    if "name" in values and _taken(conn, values["name"], group.domain_id, group.id):
        raise IdentityConflict(f"a group named {values['name']!r} already exists")
    try:
        conn.execute(sa.update(s.groups).where(s.groups.c.id == group.id)
                     .values(**values, updated_at=utcnow()))
    except sa.exc.IntegrityError:
        raise IdentityConflict(f"a group named {values.get('name')!r} already exists") from None
    found = get(conn, group.id)
    assert found is not None
    return found


def delete(conn: Connection, group_id: str) -> bool:
    assignments.forget_actor(conn, "group", group_id)
    conn.execute(sa.delete(s.group_members).where(s.group_members.c.group_id == group_id))
    return bool(conn.execute(sa.delete(s.groups).where(s.groups.c.id == group_id)).rowcount)


def members(conn: Connection, group_id: str) -> list[str]:
    m = s.group_members
    return list(conn.execute(sa.select(m.c.user_id).where(m.c.group_id == group_id)
                             .order_by(m.c.user_id)).scalars())


def is_member(conn: Connection, group_id: str, user_id: str) -> bool:
    m = s.group_members
    return conn.execute(sa.select(m.c.user_id).where(m.c.group_id == group_id,
                                                     m.c.user_id == user_id)).first() is not None


def add_member(conn: Connection, group_id: str, user_id: str) -> None:
    if not is_member(conn, group_id, user_id):
        conn.execute(sa.insert(s.group_members).values(group_id=group_id, user_id=user_id))


def remove_member(conn: Connection, group_id: str, user_id: str) -> bool:
    m = s.group_members
    return bool(conn.execute(sa.delete(m).where(m.c.group_id == group_id,
                                                m.c.user_id == user_id)).rowcount)
