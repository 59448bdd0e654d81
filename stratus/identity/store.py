"""Reading and writing the identity database's core: domains, projects (with parents and
tags), users, roles and the roles they imply, revoked tokens, and the bootstrap.
Plain functions over a connection. Role assignments are ``assignments.py``, groups
``groups.py``, the catalog ``endpoints.py``, application credentials ``appcreds.py``,
credentials ``credentials.py``.

Passwords are kept as scrypt hashes (the standard library's; Keystone uses bcrypt or
scrypt through passlib): ``scrypt$N$r$p$salt$hash`` with a random 16-byte salt.

Names are unique per domain (projects, users, groups) or per domain and globally
(roles); a clash is :class:`IdentityConflict` (409) whether a check here or the
database's unique constraint (a concurrent writer) finds it.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import assignments
from stratus.identity import schema as s
from stratus.identity.model import (
    DOMAIN_ID,
    DOMAIN_NAME,
    Domain,
    IdentityConflict,
    IdentityInputError,
    Project,
    Role,
    User,
)

__all__ = ["DOMAIN_ID", "DOMAIN_NAME", "Domain", "IdentityConflict", "IdentityInputError",
           "Project", "Role", "User"]

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
# Keystone's column sizes: what a create or an update may give.
PROJECT_NAME_MAX, USER_NAME_MAX, DOMAIN_NAME_MAX = 64, 255, 64


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def new_id() -> str:
    return uuid.uuid4().hex


@contextlib.contextmanager
def _unique(what: str) -> Iterator[None]:
    """A unique constraint a concurrent writer hit first is a conflict, not a 500."""
    try:
        yield
    except sa.exc.IntegrityError:
        raise IdentityConflict(f"Conflict occurred attempting to store {what}.") from None


def _extra(row: Any) -> dict[str, Any]:
    return dict(json.loads(row.extra)) if row.extra else {}


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


# ---- domains ------------------------------------------------------------------------------

def _domain(row: Any) -> Domain:
    return Domain(row.id, row.name, row.description, bool(row.enabled))


def get_domain(conn: Connection, domain_id: str) -> Domain | None:
    row = conn.execute(sa.select(s.domains).where(s.domains.c.id == domain_id)).first()
    return _domain(row) if row else None


def find_domain(conn: Connection, *, domain_id: str | None = None,
                name: str | None = None) -> Domain | None:
    d = s.domains
    query = sa.select(d).where(d.c.id == domain_id) if domain_id is not None else \
        sa.select(d).where(d.c.name == name)
    row = conn.execute(query).first()
    return _domain(row) if row else None


def list_domains(conn: Connection, *, name: str | None = None,
                 enabled: bool | None = None) -> list[Domain]:
    d = s.domains
    query = sa.select(d).order_by(d.c.name)
    if name is not None:
        query = query.where(d.c.name == name)
    if enabled is not None:
        query = query.where(d.c.enabled == enabled)
    return [_domain(r) for r in conn.execute(query)]


def create_domain(conn: Connection, name: str, description: str = "", enabled: bool = True,
                  domain_id: str | None = None) -> Domain:
    if find_domain(conn, name=name) is not None:
        raise IdentityConflict(f"a domain named {name!r} already exists")
    domain = Domain(domain_id or new_id(), name, description, enabled)
    with _unique("domain"):
        conn.execute(sa.insert(s.domains).values(id=domain.id, name=name,
                                                 description=description, enabled=enabled,
                                                 created_at=utcnow()))
    return domain


def update_domain(conn: Connection, domain_id: str, **values: Any) -> None:
    if "name" in values:
        other = find_domain(conn, name=values["name"])
        if other is not None and other.id != domain_id:
            raise IdentityConflict(f"a domain named {values['name']!r} already exists")
    with _unique("domain"):
        conn.execute(sa.update(s.domains).where(s.domains.c.id == domain_id)
                     .values(**values, updated_at=utcnow()))


def delete_domain_row(conn: Connection, domain_id: str) -> bool:
    """The domain's own row (its contents are deleted by the caller first)."""
    return bool(conn.execute(sa.delete(s.domains).where(s.domains.c.id == domain_id)).rowcount)


# ---- projects ---------------------------------------------------------------------------

def _tags_of(conn: Connection, ids: list[str]) -> dict[str, tuple[str, ...]]:
    t = s.project_tags
    found: dict[str, list[str]] = {i: [] for i in ids}
    for start in range(0, len(ids), 500):
        for row in conn.execute(sa.select(t).where(t.c.project_id.in_(ids[start:start + 500]))
                                .order_by(t.c.name)):
            found[row.project_id].append(row.name)
    return {k: tuple(v) for k, v in found.items()}


def _projects(conn: Connection, rows: list[Any]) -> list[Project]:
    tags = _tags_of(conn, [r.id for r in rows])
    return [Project(r.id, r.name, r.description, bool(r.enabled), r.domain_id, r.parent_id,
                    tags[r.id], _extra(r)) for r in rows]


def check_project_name(name: str) -> None:
    if not name.strip() or len(name) > PROJECT_NAME_MAX:
        raise IdentityInputError(f"A project name has 1 to {PROJECT_NAME_MAX} characters "
                                 f"(not {len(name)}).")


def create_project(conn: Connection, name: str, description: str = "",
                   project_id: str | None = None, enabled: bool = True, *,
                   domain_id: str = DOMAIN_ID, parent_id: str | None = None,
                   tags: tuple[str, ...] = (), extra: Mapping[str, Any] | None = None
                   ) -> Project:
    check_project_name(name)
    if find_project(conn, name, domain_id=domain_id, by_id=False) is not None:
        raise IdentityConflict(f"a project named {name!r} already exists in domain "
                               f"{domain_id}")
    project = Project(project_id or new_id(), name, description, enabled, domain_id,
                      parent_id, tuple(dict.fromkeys(tags)), dict(extra or {}))
    with _unique("project"):
        conn.execute(sa.insert(s.projects).values(
            id=project.id, name=name, domain_id=domain_id, description=description,
            enabled=enabled, parent_id=parent_id, created_at=utcnow(),
            extra=json.dumps(project.extra) if project.extra else None))
    set_project_tags(conn, project.id, project.tags)
    return project


def get_project(conn: Connection, project_id: str) -> Project | None:
    rows = conn.execute(sa.select(s.projects).where(s.projects.c.id == project_id)).all()
    return _projects(conn, list(rows))[0] if rows else None


def find_project(conn: Connection, name_or_id: str, *, domain_id: str = DOMAIN_ID,
                 by_id: bool = True) -> Project | None:
    """A project by id, or by name in ``domain_id``."""
    p = s.projects
    by_name = sa.and_(p.c.name == name_or_id, p.c.domain_id == domain_id)
    where = sa.or_(p.c.id == name_or_id, by_name) if by_id else by_name
    rows = conn.execute(sa.select(p).where(where)
                        .order_by((p.c.id == name_or_id).desc()).limit(1)).all()
    return _projects(conn, list(rows))[0] if rows else None


def list_projects(conn: Connection, *, name: str | None = None, user_id: str | None = None,
                  domain_id: str | None = None, parent_id: str | None = None,
                  enabled: bool | None = None, ids: list[str] | None = None
                  ) -> list[Project]:
    """Projects, filtered; ``user_id`` keeps those the user holds a role on directly (its
    own assignments: ``assignments.project_ids_of`` gives the effective ones)."""
    p = s.projects
    query = sa.select(p).order_by(p.c.name)
    for column, value in (("name", name), ("domain_id", domain_id), ("enabled", enabled)):
        if value is not None:
            query = query.where(p.c[column] == value)
    if parent_id is not None:
        query = query.where(p.c.parent_id == parent_id)
    if ids is not None:
        query = query.where(p.c.id.in_(ids))
    if user_id is not None:
        a = s.role_assignments
        query = query.where(p.c.id.in_(sa.select(a.c.target_id).where(
            a.c.actor_type == "user", a.c.actor_id == user_id,
            a.c.target_type == "project")))
    return _projects(conn, list(conn.execute(query)))


def update_project(conn: Connection, project_id: str, **values: Any) -> None:
    if "name" in values:
        check_project_name(values["name"])
        current = get_project(conn, project_id)
        other = find_project(conn, values["name"], by_id=False,
                             domain_id=current.domain_id if current else DOMAIN_ID)
        if other is not None and other.id != project_id:
            raise IdentityConflict(f"a project named {values['name']!r} already exists")
    if "extra" in values:
        values["extra"] = json.dumps(values["extra"]) if values["extra"] else None
    with _unique("project"):
        conn.execute(sa.update(s.projects).where(s.projects.c.id == project_id)
                     .values(**values, updated_at=utcnow()))


def children_of(conn: Connection, project_id: str) -> list[str]:
    p = s.projects
    return list(conn.execute(sa.select(p.c.id).where(p.c.parent_id == project_id)).scalars())


def delete_project(conn: Connection, project_id: str) -> bool:
    """The project, its grants, tags, and the application credentials made for it (as
    Keystone deletes them with their project)."""
    assignments.forget_target(conn, "project", project_id)
    a = s.application_credentials
    for cred_id in list(conn.execute(sa.select(a.c.id).where(a.c.project_id == project_id))
                        .scalars()):
        _forget_app_cred(conn, cred_id)
    conn.execute(sa.delete(s.project_tags).where(s.project_tags.c.project_id == project_id))
    return bool(conn.execute(sa.delete(s.projects).where(s.projects.c.id == project_id))
                .rowcount)


def set_project_tags(conn: Connection, project_id: str, tags: tuple[str, ...]) -> None:
    t = s.project_tags
    conn.execute(sa.delete(t).where(t.c.project_id == project_id))
    if tags:
        conn.execute(sa.insert(t), [{"project_id": project_id, "name": n}
                                    for n in dict.fromkeys(tags)])


# ---- users --------------------------------------------------------------------------------

def _user(row: Any) -> User:
    return User(row.id, row.name, bool(row.enabled), row.default_project_id, row.domain_id,
                _extra(row))


def create_user(conn: Connection, name: str, password: str | None,
                default_project_id: str | None = None, user_id: str | None = None,
                enabled: bool = True, *, domain_id: str = DOMAIN_ID,
                extra: Mapping[str, Any] | None = None) -> User:
    if find_user(conn, name, domain_id=domain_id, by_id=False) is not None:
        raise IdentityConflict(f"a user named {name!r} already exists in domain {domain_id}")
    user = User(user_id or new_id(), name, enabled, default_project_id, domain_id,
                dict(extra or {}))
    with _unique("user"):
        conn.execute(sa.insert(s.users).values(
            id=user.id, name=name, domain_id=domain_id,
            password_hash=hash_password(password) if password else None,
            default_project_id=default_project_id, enabled=enabled, created_at=utcnow(),
            extra=json.dumps(user.extra) if user.extra else None))
    return user


def get_user(conn: Connection, user_id: str) -> User | None:
    row = conn.execute(sa.select(s.users).where(s.users.c.id == user_id)).first()
    return _user(row) if row else None


def find_user(conn: Connection, name_or_id: str, *, domain_id: str = DOMAIN_ID,
              by_id: bool = True) -> User | None:
    """A user by id, or by name in ``domain_id``."""
    u = s.users
    by_name = sa.and_(u.c.name == name_or_id, u.c.domain_id == domain_id)
    where = sa.or_(u.c.id == name_or_id, by_name) if by_id else by_name
    row = conn.execute(sa.select(u).where(where)
                       .order_by((u.c.id == name_or_id).desc()).limit(1)).first()
    return _user(row) if row else None


def list_users(conn: Connection, name: str | None = None, *, domain_id: str | None = None,
               enabled: bool | None = None, ids: list[str] | None = None) -> list[User]:
    u = s.users
    query = sa.select(u).order_by(u.c.name)
    for column, value in (("name", name), ("domain_id", domain_id), ("enabled", enabled)):
        if value is not None:
            query = query.where(u.c[column] == value)
    if ids is not None:
        query = query.where(u.c.id.in_(ids))
    return [_user(r) for r in conn.execute(query)]


def password_hash(conn: Connection, user_id: str) -> str | None:
    return conn.execute(sa.select(s.users.c.password_hash)
                        .where(s.users.c.id == user_id)).scalar()


def update_user(conn: Connection, user_id: str, *, password: str | None = None,
                **values: Any) -> None:
    """Change a user; a new name taken in its domain is :class:`IdentityConflict`."""
    if "name" in values:
        current = get_user(conn, user_id)
        other = find_user(conn, values["name"], by_id=False,
                          domain_id=current.domain_id if current else DOMAIN_ID)
        if other is not None and other.id != user_id:
            raise IdentityConflict(f"a user named {values['name']!r} already exists")
    if password is not None:
        values["password_hash"] = hash_password(password)
    if "extra" in values:
        values["extra"] = json.dumps(values["extra"]) if values["extra"] else None
    with _unique("user"):
        conn.execute(sa.update(s.users).where(s.users.c.id == user_id)
                     .values(**values, updated_at=utcnow()))


def _forget_app_cred(conn: Connection, cred_id: str) -> None:
    for table in (s.application_credential_roles, s.application_credential_access_rules):
        conn.execute(sa.delete(table).where(table.c.application_credential_id == cred_id))
    conn.execute(sa.delete(s.application_credentials)
                 .where(s.application_credentials.c.id == cred_id))


def delete_user(conn: Connection, user_id: str) -> bool:
    """The user and everything that is only its: grants, group memberships, application
    credentials and access rules, credentials (explicitly, not left to cascades)."""
    assignments.forget_actor(conn, "user", user_id)
    a = s.application_credentials
    for cred_id in list(conn.execute(sa.select(a.c.id).where(a.c.user_id == user_id))
                        .scalars()):
        _forget_app_cred(conn, cred_id)
    for table in (s.access_rules, s.credentials, s.group_members):
        conn.execute(sa.delete(table).where(table.c.user_id == user_id))
    conn.execute(sa.delete(s.user_revocations).where(s.user_revocations.c.user_id == user_id))
    return bool(conn.execute(sa.delete(s.users).where(s.users.c.id == user_id)).rowcount)


# ---- roles and the roles they imply ------------------------------------------------------------

def _role(row: Any) -> Role:
    return Role(row.id, row.name, row.domain_id or None, row.description)


def create_role(conn: Connection, name: str, *, domain_id: str | None = None,
                description: str | None = None, role_id: str | None = None) -> Role:
    r = s.roles
    taken = conn.execute(sa.select(r.c.id).where(r.c.name == name,
                                                 r.c.domain_id == (domain_id or ""))).first()
    if taken is not None:
        raise IdentityConflict(f"a role named {name!r} already exists")
    role = Role(role_id or new_id(), name, domain_id, description)
    with _unique("role"):
        conn.execute(sa.insert(r).values(id=role.id, name=name, domain_id=domain_id or "",
                                         description=description))
    return role


def ensure_role(conn: Connection, name: str) -> Role:
    """The global role of that name, made if missing."""
    r = s.roles
    row = conn.execute(sa.select(r).where(r.c.name == name, r.c.domain_id == "")).first()
    return _role(row) if row else create_role(conn, name)


def find_role(conn: Connection, name_or_id: str) -> Role | None:
    """A role by id, or a global role by name."""
    r = s.roles
    row = conn.execute(sa.select(r).where(sa.or_(
        r.c.id == name_or_id, sa.and_(r.c.name == name_or_id, r.c.domain_id == "")))
        .order_by((r.c.id == name_or_id).desc()).limit(1)).first()
    return _role(row) if row else None


def list_roles(conn: Connection, *, name: str | None = None, domain_id: str | None = None,
               ids: list[str] | None = None) -> list[Role]:
    """Global roles, or a domain's when ``domain_id`` is given."""
    r = s.roles
    query = sa.select(r).where(r.c.domain_id == (domain_id or "")).order_by(r.c.name)
    if ids is not None:
        query = sa.select(r).where(r.c.id.in_(ids)).order_by(r.c.name)
    if name is not None:
        query = query.where(r.c.name == name)
    return [_role(row) for row in conn.execute(query)]


def update_role(conn: Connection, role_id: str, **values: Any) -> None:
    r = s.roles
    if "name" in values:
        current = conn.execute(sa.select(r).where(r.c.id == role_id)).first()
        taken = conn.execute(sa.select(r.c.id).where(
            r.c.name == values["name"], r.c.domain_id == (current.domain_id if current
                                                           else ""))).first()
        if taken is not None and taken.id != role_id:
            raise IdentityConflict(f"a role named {values['name']!r} already exists")
    with _unique("role"):
        conn.execute(sa.update(r).where(r.c.id == role_id).values(**values))


def delete_role(conn: Connection, role_id: str) -> bool:
    i = s.implied_roles
    conn.execute(sa.delete(i).where(sa.or_(i.c.prior_role_id == role_id,
                                           i.c.implied_role_id == role_id)))
    conn.execute(sa.delete(s.role_assignments).where(s.role_assignments.c.role_id == role_id))
    conn.execute(sa.delete(s.application_credential_roles).where(
        s.application_credential_roles.c.role_id == role_id))
    return bool(conn.execute(sa.delete(s.roles).where(s.roles.c.id == role_id)).rowcount)


def add_implied(conn: Connection, prior: str, implied: str) -> None:
    i = s.implied_roles
    if conn.execute(sa.select(i).where(i.c.prior_role_id == prior,
                                       i.c.implied_role_id == implied)).first() is None:
        conn.execute(sa.insert(i).values(prior_role_id=prior, implied_role_id=implied))


def remove_implied(conn: Connection, prior: str, implied: str) -> bool:
    i = s.implied_roles
    return bool(conn.execute(sa.delete(i).where(i.c.prior_role_id == prior,
                                                i.c.implied_role_id == implied)).rowcount)


# ---- project-scope compatibility (the CLI, the bootstrap) ------------------------------------

def grant(conn: Connection, user_id: str, project_id: str, role_id: str) -> None:
    assignments.add(conn, assignments.Assignment("user", user_id, "project", project_id,
                                                 role_id))


def ungrant(conn: Connection, user_id: str, project_id: str, role_id: str) -> bool:
    return assignments.remove(conn, assignments.Assignment("user", user_id, "project",
                                                           project_id, role_id))


def roles_of(conn: Connection, user_id: str, project_id: str) -> list[Role]:
    """The user's effective roles on the project (direct, through groups, inherited from
    its domain or parents, and what those imply)."""
    return assignments.effective_roles(conn, user_id, "project", project_id)


def list_assignments(conn: Connection, *, user_id: str | None = None,
                     project_id: str | None = None) -> list[tuple[str, str, str]]:
    """(user id, project id, role id) of direct user assignments on projects."""
    return [(a.actor_id, a.target_id, a.role_id) for a in assignments.query(
        conn, actor_type="user", actor_id=user_id, target_type="project",
        target_id=project_id)]


# ---- revoked tokens -------------------------------------------------------------------------

def revoke(conn: Connection, audit_id: str, expires_at: dt.datetime) -> None:
    r = s.revocations
    conn.execute(sa.delete(r).where(r.c.expires_at < utcnow()))   # keep the list short
    if conn.execute(sa.select(r.c.audit_id).where(r.c.audit_id == audit_id)).first() is None:
        conn.execute(sa.insert(r).values(audit_id=audit_id, expires_at=expires_at))


def revoke_user_tokens(conn: Connection, user_id: str, issued_before: dt.datetime) -> None:
    """Every token of the user issued at or before ``issued_before`` (a password change)."""
    r = s.user_revocations
    if conn.execute(sa.update(r).where(r.c.user_id == user_id)
                    .values(issued_before=issued_before)).rowcount == 0:
        conn.execute(sa.insert(r).values(user_id=user_id, issued_before=issued_before))


def is_revoked(conn: Connection, audit_id: str, user_id: str | None = None,
               issued_at: dt.datetime | None = None) -> bool:
    r = s.revocations
    if conn.execute(sa.select(r.c.audit_id).where(r.c.audit_id == audit_id)).first():
        return True
    if user_id is None or issued_at is None:
        return False
    u = s.user_revocations
    before = conn.execute(sa.select(u.c.issued_before).where(u.c.user_id == user_id)).scalar()
    return before is not None and issued_at <= before


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
        if project_name == "admin":
            # keystone-manage bootstrap also makes the admin an admin of the system.
            assignments.add(conn, assignments.Assignment(
                "user", user.id, "system", assignments.SYSTEM, roles["admin"].id))
        if project_name == "admin" and demo_password is not None:
            demo = find_project(conn, "demo") or create_project(conn, "demo", "demo project")
            grant(conn, user.id, demo.id, roles["admin"].id)
        made[f"project:{project_name}"], made[f"user:{user_name}"] = project.id, user.id
    return made
