"""Role assignments: who (a user or a group) holds which role where (a project, a domain,
the system), and what that makes a user's effective roles.

A user's effective roles on a target are its own assignments there, its groups'
assignments there, assignments marked ``inherited`` on the target's domain or on the
project's ancestors (OS-INHERIT), and every role those imply. Domain-specific roles
count only through the global roles they imply, as in Keystone's tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import schema as s
from stratus.identity.model import Role

ACTORS = ("user", "group")
TARGETS = ("project", "domain", "system")
SYSTEM = "all"   # the system target's one id


@dataclass(frozen=True)
class Assignment:
    actor_type: str
    actor_id: str
    target_type: str
    target_id: str
    role_id: str
    inherited: bool = False


def _row(a: Assignment) -> dict[str, object]:
    return {"actor_type": a.actor_type, "actor_id": a.actor_id,
            "target_type": a.target_type, "target_id": a.target_id, "role_id": a.role_id,
            "inherited": a.inherited}


def _match(a: Assignment) -> sa.ColumnElement[bool]:
    t = s.role_assignments
    return sa.and_(*(t.c[k] == v for k, v in _row(a).items()))


def exists(conn: Connection, a: Assignment) -> bool:
    return conn.execute(sa.select(s.role_assignments.c.role_id).where(_match(a))).first() \
        is not None


def add(conn: Connection, a: Assignment) -> None:
    if not exists(conn, a):
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(s.role_assignments).values(**_row(a)))
        except sa.exc.IntegrityError:
            pass   # a concurrent grant of the same: granted either way


def remove(conn: Connection, a: Assignment) -> bool:
    return bool(conn.execute(sa.delete(s.role_assignments).where(_match(a))).rowcount)


def query(conn: Connection, *, actor_type: str | None = None, actor_id: str | None = None,
          actor_ids: Iterable[str] | None = None, target_type: str | None = None,
          target_id: str | None = None, target_ids: Iterable[str] | None = None,
          role_id: str | None = None, inherited: bool | None = None) -> list[Assignment]:
    t = s.role_assignments
    q = sa.select(t)
    for column, value in (("actor_type", actor_type), ("actor_id", actor_id),
                          ("target_type", target_type), ("target_id", target_id),
                          ("role_id", role_id), ("inherited", inherited)):
        if value is not None:
            q = q.where(t.c[column] == value)
    if actor_ids is not None:
        q = q.where(t.c.actor_id.in_(list(actor_ids)))
    if target_ids is not None:
        q = q.where(t.c.target_id.in_(list(target_ids)))
    q = q.order_by(t.c.actor_type, t.c.actor_id, t.c.target_type, t.c.target_id, t.c.role_id)
    return [Assignment(r.actor_type, r.actor_id, r.target_type, r.target_id, r.role_id,
                       bool(r.inherited)) for r in conn.execute(q)]


def forget_actor(conn: Connection, actor_type: str, actor_id: str) -> None:
    t = s.role_assignments
    conn.execute(sa.delete(t).where(t.c.actor_type == actor_type, t.c.actor_id == actor_id))


def forget_target(conn: Connection, target_type: str, target_id: str) -> None:
    t = s.role_assignments
    conn.execute(sa.delete(t).where(t.c.target_type == target_type,
                                    t.c.target_id == target_id))


# ---- effective roles ------------------------------------------------------------------------

def groups_of(conn: Connection, user_id: str) -> list[str]:
    m = s.group_members
    return list(conn.execute(sa.select(m.c.group_id).where(m.c.user_id == user_id)).scalars())


def _ancestors(conn: Connection, project_id: str) -> tuple[str | None, list[str]]:
    """The project's domain and its ancestor projects (nearest first)."""
    p = s.projects
    domain, chain, current, seen = None, [], project_id, set()
    while current is not None and current not in seen:
        seen.add(current)
        row = conn.execute(sa.select(p.c.domain_id, p.c.parent_id)
                           .where(p.c.id == current)).first()
        if row is None:
            break
        domain = row.domain_id
        if current != project_id:
            chain.append(current)
        current = row.parent_id
    return domain, chain


def direct_role_ids(conn: Connection, user_id: str, target_type: str, target_id: str
                    ) -> set[str]:
    """Role ids assigned to the user or its groups on the target, inherited ones from
    above included; before implications."""
    actors = [("user", user_id), *(("group", g) for g in groups_of(conn, user_id))]
    t = s.role_assignments
    targets = [sa.and_(t.c.target_type == target_type, t.c.target_id == target_id,
                       t.c.inherited.is_(False))]
    if target_type == "project":
        domain, ancestors = _ancestors(conn, target_id)
        if domain is not None:
            targets.append(sa.and_(t.c.target_type == "domain", t.c.target_id == domain,
                                   t.c.inherited.is_(True)))
        if ancestors:
            targets.append(sa.and_(t.c.target_type == "project",
                                   t.c.target_id.in_(ancestors), t.c.inherited.is_(True)))
    who = sa.or_(*(sa.and_(t.c.actor_type == kind, t.c.actor_id == ident)
                   for kind, ident in actors))
    return set(conn.execute(sa.select(t.c.role_id).where(who, sa.or_(*targets))).scalars())


def implies(conn: Connection) -> dict[str, set[str]]:
    """prior role id -> the role ids it implies directly."""
    found: dict[str, set[str]] = {}
    for row in conn.execute(sa.select(s.implied_roles)):
        found.setdefault(row.prior_role_id, set()).add(row.implied_role_id)
    return found


def expand_implied(conn: Connection, role_ids: set[str]) -> set[str]:
    """``role_ids`` and every role they imply, however indirectly."""
    graph, found, todo = implies(conn), set(role_ids), list(role_ids)
    while todo:
        for implied in graph.get(todo.pop(), ()):
            if implied not in found:
                found.add(implied)
                todo.append(implied)
    return found


def expand(conn: Connection, role_ids: set[str]) -> list[Role]:
    """The global roles among ``role_ids`` and everything they imply."""
    every = expand_implied(conn, role_ids)
    r = s.roles
    rows = conn.execute(sa.select(r).where(r.c.id.in_(sorted(every)), r.c.domain_id == "")
                        .order_by(r.c.name))
    return [Role(row.id, row.name, None, row.description) for row in rows]


def effective_roles(conn: Connection, user_id: str, target_type: str, target_id: str
                    ) -> list[Role]:
    return expand(conn, direct_role_ids(conn, user_id, target_type, target_id))


def target_ids_of(conn: Connection, user_id: str, target_type: str) -> set[str]:
    """Targets of that type on which the user holds some role (directly, by group, or,
    for projects, inherited from a domain or a parent)."""
    actors = [("user", user_id), *(("group", g) for g in groups_of(conn, user_id))]
    t = s.role_assignments
    who = sa.or_(*(sa.and_(t.c.actor_type == kind, t.c.actor_id == ident)
                   for kind, ident in actors))
    rows = conn.execute(sa.select(t.c.target_type, t.c.target_id, t.c.inherited).where(who))
    found: set[str] = set()
    inherited_domains: list[str] = []
    inherited_parents: list[str] = []
    for row in rows:
        if row.target_type == target_type and not row.inherited:
            found.add(row.target_id)
        elif target_type == "project" and row.inherited:
            (inherited_domains if row.target_type == "domain"
             else inherited_parents).append(row.target_id)
    if inherited_domains or inherited_parents:
        p = s.projects
        if inherited_domains:
            found |= set(conn.execute(sa.select(p.c.id).where(
                p.c.domain_id.in_(inherited_domains))).scalars())
        todo = list(inherited_parents)
        while todo:
            children = set(conn.execute(sa.select(p.c.id).where(
                p.c.parent_id.in_(todo))).scalars()) - found
            found |= children
            todo = list(children)
    return found
