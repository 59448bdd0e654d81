"""Reading and writing the identity database: plain functions over a connection.

Passwords are kept as scrypt hashes (the standard library's; Keystone uses bcrypt or
scrypt through passlib): ``scrypt$N$r$p$salt$hash`` with a random 16-byte salt.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import os
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import schema as s

DOMAIN_ID, DOMAIN_NAME = "default", "Default"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


class IdentityConflict(Exception):
    """A name already taken in the domain."""


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    description: str = ""
    enabled: bool = True
    domain_id: str = DOMAIN_ID


@dataclass(frozen=True)
class User:
    id: str
    name: str
    enabled: bool = True
    default_project_id: str | None = None
    domain_id: str = DOMAIN_ID


@dataclass(frozen=True)
class Role:
    id: str
    name: str


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def new_id() -> str:
    return uuid.uuid4().hex


# ---- passwords ------------------------------------------------------------------------

def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return "$".join(["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P),
                     base64.b64encode(salt).decode(), base64.b64encode(digest).decode()])


def check_password(password: str, stored: str | None) -> bool:
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        found = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n),
                               r=int(r), p=int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(found, base64.b64decode(digest))


# ---- projects ---------------------------------------------------------------------------

def _project(row: Any) -> Project:
    return Project(row.id, row.name, row.description, bool(row.enabled), row.domain_id)


def create_project(conn: Connection, name: str, description: str = "",
                   project_id: str | None = None, enabled: bool = True) -> Project:
    if find_project(conn, name) is not None:
        raise IdentityConflict(f"a project named {name!r} already exists")
    project = Project(project_id or new_id(), name, description, enabled)
    conn.execute(sa.insert(s.projects).values(
        id=project.id, name=name, domain_id=DOMAIN_ID, description=description,
        enabled=enabled, created_at=utcnow()))
    return project


def get_project(conn: Connection, project_id: str) -> Project | None:
    row = conn.execute(sa.select(s.projects).where(s.projects.c.id == project_id)).first()
    return _project(row) if row else None


def find_project(conn: Connection, name_or_id: str) -> Project | None:
    p = s.projects
    row = conn.execute(sa.select(p).where(sa.or_(p.c.id == name_or_id,
                                                 p.c.name == name_or_id))
                       .order_by((p.c.id == name_or_id).desc())).first()
    return _project(row) if row else None


def list_projects(conn: Connection, *, name: str | None = None,
                  user_id: str | None = None) -> list[Project]:
    p, a = s.projects, s.assignments
    query = sa.select(p).order_by(p.c.name)
    if name is not None:
        query = query.where(p.c.name == name)
    if user_id is not None:
        query = query.where(p.c.id.in_(sa.select(a.c.project_id)
                                       .where(a.c.user_id == user_id)))
    return [_project(r) for r in conn.execute(query)]


def update_project(conn: Connection, project_id: str, **values: Any) -> None:
    conn.execute(sa.update(s.projects).where(s.projects.c.id == project_id)
                 .values(**values, updated_at=utcnow()))


def delete_project(conn: Connection, project_id: str) -> bool:
    conn.execute(sa.delete(s.assignments).where(s.assignments.c.project_id == project_id))
    return bool(conn.execute(sa.delete(s.projects).where(s.projects.c.id == project_id))
                .rowcount)


# ---- users --------------------------------------------------------------------------------

def _user(row: Any) -> User:
    return User(row.id, row.name, bool(row.enabled), row.default_project_id, row.domain_id)


def create_user(conn: Connection, name: str, password: str | None,
                default_project_id: str | None = None, user_id: str | None = None,
                enabled: bool = True) -> User:
    if find_user(conn, name) is not None:
        raise IdentityConflict(f"a user named {name!r} already exists")
    user = User(user_id or new_id(), name, enabled, default_project_id)
    conn.execute(sa.insert(s.users).values(
        id=user.id, name=name, domain_id=DOMAIN_ID,
        password_hash=hash_password(password) if password else None,
        default_project_id=default_project_id, enabled=enabled, created_at=utcnow()))
    return user


def get_user(conn: Connection, user_id: str) -> User | None:
    row = conn.execute(sa.select(s.users).where(s.users.c.id == user_id)).first()
    return _user(row) if row else None


def find_user(conn: Connection, name_or_id: str) -> User | None:
    u = s.users
    row = conn.execute(sa.select(u).where(sa.or_(u.c.id == name_or_id, u.c.name == name_or_id))
                       .order_by((u.c.id == name_or_id).desc())).first()
    return _user(row) if row else None


def list_users(conn: Connection, name: str | None = None) -> list[User]:
    query = sa.select(s.users).order_by(s.users.c.name)
    if name is not None:
        query = query.where(s.users.c.name == name)
    return [_user(r) for r in conn.execute(query)]


def password_hash(conn: Connection, user_id: str) -> str | None:
    return conn.execute(sa.select(s.users.c.password_hash)
                        .where(s.users.c.id == user_id)).scalar()


def update_user(conn: Connection, user_id: str, *, password: str | None = None,
                **values: Any) -> None:
    if password is not None:
        values["password_hash"] = hash_password(password)
    conn.execute(sa.update(s.users).where(s.users.c.id == user_id)
                 .values(**values, updated_at=utcnow()))


def delete_user(conn: Connection, user_id: str) -> bool:
    conn.execute(sa.delete(s.assignments).where(s.assignments.c.user_id == user_id))
    return bool(conn.execute(sa.delete(s.users).where(s.users.c.id == user_id)).rowcount)


# ---- roles and assignments -------------------------------------------------------------

def ensure_role(conn: Connection, name: str) -> Role:
    found = find_role(conn, name)
    if found is not None:
        return found
    role = Role(new_id(), name)
    conn.execute(sa.insert(s.roles).values(id=role.id, name=name))
    return role


def find_role(conn: Connection, name_or_id: str) -> Role | None:
    r = s.roles
    row = conn.execute(sa.select(r).where(sa.or_(r.c.id == name_or_id,
                                                 r.c.name == name_or_id))).first()
    return Role(row.id, row.name) if row else None


def list_roles(conn: Connection) -> list[Role]:
    return [Role(r.id, r.name) for r in conn.execute(sa.select(s.roles).order_by(s.roles.c.name))]


def grant(conn: Connection, user_id: str, project_id: str, role_id: str) -> None:
    a = s.assignments
    exists = conn.execute(sa.select(a.c.role_id).where(
        a.c.user_id == user_id, a.c.project_id == project_id, a.c.role_id == role_id)).first()
    if exists is None:
        conn.execute(sa.insert(a).values(user_id=user_id, project_id=project_id,
                                         role_id=role_id))


def ungrant(conn: Connection, user_id: str, project_id: str, role_id: str) -> bool:
    a = s.assignments
    return bool(conn.execute(sa.delete(a).where(
        a.c.user_id == user_id, a.c.project_id == project_id, a.c.role_id == role_id)).rowcount)


def roles_of(conn: Connection, user_id: str, project_id: str) -> list[Role]:
    a, r = s.assignments, s.roles
    rows = conn.execute(sa.select(r.c.id, r.c.name).select_from(a.join(r, r.c.id == a.c.role_id))
                        .where(a.c.user_id == user_id, a.c.project_id == project_id)
                        .order_by(r.c.name))
    return [Role(row.id, row.name) for row in rows]


def list_assignments(conn: Connection, *, user_id: str | None = None,
                     project_id: str | None = None) -> list[tuple[str, str, str]]:
    """(user id, project id, role id) triples."""
    a = s.assignments
    query = sa.select(a.c.user_id, a.c.project_id, a.c.role_id)
    if user_id is not None:
        query = query.where(a.c.user_id == user_id)
    if project_id is not None:
        query = query.where(a.c.project_id == project_id)
    return [(r.user_id, r.project_id, r.role_id) for r in conn.execute(query)]


# ---- revoked tokens -------------------------------------------------------------------------

def revoke(conn: Connection, audit_id: str, expires_at: dt.datetime) -> None:
    r = s.revocations
    conn.execute(sa.delete(r).where(r.c.expires_at < utcnow()))   # keep the list short
    if conn.execute(sa.select(r.c.audit_id).where(r.c.audit_id == audit_id)).first() is None:
        conn.execute(sa.insert(r).values(audit_id=audit_id, expires_at=expires_at))


def is_revoked(conn: Connection, audit_id: str) -> bool:
    r = s.revocations
    return conn.execute(sa.select(r.c.audit_id).where(r.c.audit_id == audit_id)
                        ).first() is not None


# ---- bootstrap ----------------------------------------------------------------------------

# keystone-manage bootstrap's roles (admin, manager, member, reader), and service.
STANDARD_ROLES = ("admin", "manager", "member", "reader", "service")


def bootstrap(conn: Connection, admin_password: str, *, demo_password: str | None = None,
              service_password: str | None = None) -> dict[str, str]:
    """What ``keystone-manage bootstrap`` makes (admin user and project, the standard
    roles), plus a demo project and user; idempotent. Names -> ids."""
    made: dict[str, str] = {}
    roles = {name: ensure_role(conn, name) for name in STANDARD_ROLES}
    for project_name, user_name, password, role_names in (
            ("admin", "admin", admin_password, ("admin", "manager", "member", "reader")),
            ("demo", "demo", demo_password, ("member", "reader")),
            ("service", "stratus", service_password, ("admin", "service"))):
        if password is None:
            continue
        project = find_project(conn, project_name) or create_project(
            conn, project_name, f"{project_name} project")
        user = find_user(conn, user_name)
        if user is None:
            user = create_user(conn, user_name, password, default_project_id=project.id)
        elif not check_password(password, password_hash(conn, user.id)):
            update_user(conn, user.id, password=password)
        for role in role_names:
            grant(conn, user.id, project.id, roles[role].id)
        if project_name == "admin" and demo_password is not None:
            demo = find_project(conn, "demo") or create_project(conn, "demo", "demo project")
            grant(conn, user.id, demo.id, roles["admin"].id)
        made[f"project:{project_name}"], made[f"user:{user_name}"] = project.id, user.id
    return made
