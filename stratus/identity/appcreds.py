"""Application credentials: a secret a user makes for a program (openstacksdk, Terraform,
a CI job) that authenticates as that user on one project with some of the user's roles,
optionally only for some API calls (access rules), optionally until a given time.

The secret is shown once, at creation, and kept as a hash (scrypt, as passwords). A
restricted credential (the default) cannot be used to make or delete application
credentials. Access rules are the user's, shared between that user's credentials, and
are matched by the token middleware in front of each API: ``*`` matches one path
segment, ``**`` any number of them.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import schema as s
from stratus.identity.model import IdentityConflict, Role
from stratus.identity.store import hash_password, new_id, utcnow

METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


@dataclass(frozen=True)
class AccessRule:
    id: str
    service: str
    path: str
    method: str


@dataclass(frozen=True)
class AppCred:
    id: str
    name: str
    user_id: str
    project_id: str | None
    description: str | None = None
    expires_at: dt.datetime | None = None
    unrestricted: bool = False
    roles: tuple[Role, ...] = ()
    access_rules: tuple[AccessRule, ...] = field(default_factory=tuple)

    def expired(self, now: dt.datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def new_secret() -> str:
    """64 random bytes, url-safe base64 without padding (Keystone's form)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(64)).rstrip(b"=").decode()


# ---- access rules: matching a request -----------------------------------------------------------

def _pattern(path: str) -> re.Pattern[str]:
    """``/v2.1/servers/*/ips`` as a regular expression over request paths."""
    regex = ""
    for segment in path.strip("/").split("/"):
        if segment == "**":
            regex += "(?:/[^/]+)*"
        else:
            regex += "/" + "".join("[^/]*" if c == "*" else re.escape(c) for c in segment)
    return re.compile("^" + (regex or "/") + "/?$")


def permits(rules: Sequence[AccessRule], service: str, method: str, path: str) -> bool:
    """Whether any rule lets ``method path`` through to ``service``."""
    return any(r.service == service and r.method == method and _pattern(r.path).match(path)
               for r in rules)


# ---- store ------------------------------------------------------------------------------

def _roles(conn: Connection, cred_ids: list[str]) -> dict[str, tuple[Role, ...]]:
    j, r = s.application_credential_roles, s.roles
    found: dict[str, list[Role]] = {i: [] for i in cred_ids}
    rows = conn.execute(sa.select(j.c.application_credential_id, r.c.id, r.c.name,
                                  r.c.domain_id).select_from(j.join(r, r.c.id == j.c.role_id))
                        .where(j.c.application_credential_id.in_(cred_ids)).order_by(r.c.name))
    for row in rows:
        found[row.application_credential_id].append(Role(row.id, row.name,
                                                         row.domain_id or None))
    return {k: tuple(v) for k, v in found.items()}


def _rules(conn: Connection, cred_ids: list[str]) -> dict[str, tuple[AccessRule, ...]]:
    j, a = s.application_credential_access_rules, s.access_rules
    found: dict[str, list[AccessRule]] = {i: [] for i in cred_ids}
    rows = conn.execute(sa.select(j.c.application_credential_id, a)
                        .select_from(j.join(a, a.c.id == j.c.access_rule_id))
                        .where(j.c.application_credential_id.in_(cred_ids)).order_by(a.c.id))
    for row in rows:
        found[row.application_credential_id].append(
            AccessRule(row.id, row.service, row.path, row.method))
    return {k: tuple(v) for k, v in found.items()}


def _load(conn: Connection, rows: Sequence[Any]) -> list[AppCred]:
    ids = [r.id for r in rows]
    roles, rules = _roles(conn, ids), _rules(conn, ids)
    return [AppCred(r.id, r.name, r.user_id, r.project_id, r.description, r.expires_at,
                    bool(r.unrestricted), roles[r.id], rules[r.id]) for r in rows]


def get(conn: Connection, cred_id: str) -> AppCred | None:
    t = s.application_credentials
    found = _load(conn, conn.execute(sa.select(t).where(t.c.id == cred_id)).all())
    return found[0] if found else None


def find(conn: Connection, user_id: str, name: str) -> AppCred | None:
    t = s.application_credentials
    found = _load(conn, conn.execute(sa.select(t).where(t.c.user_id == user_id,
                                                         t.c.name == name)).all())
    return found[0] if found else None


def listing(conn: Connection, user_id: str, name: str | None = None) -> list[AppCred]:
    t = s.application_credentials
    query = sa.select(t).where(t.c.user_id == user_id).order_by(t.c.name)
    if name is not None:
        query = query.where(t.c.name == name)
    return _load(conn, conn.execute(query).all())


def secret_hash(conn: Connection, cred_id: str) -> str | None:
    t = s.application_credentials
    return conn.execute(sa.select(t.c.secret_hash).where(t.c.id == cred_id)).scalar()


def _rule_for(conn: Connection, user_id: str, wanted: dict[str, str]) -> AccessRule:
    """The user's access rule of that id, or the identical one it has, or a new one."""
    a = s.access_rules
    if wanted.get("id"):
        row = conn.execute(sa.select(a).where(a.c.id == wanted["id"],
                                              a.c.user_id == user_id)).first()
        if row is not None:
            return AccessRule(row.id, row.service, row.path, row.method)
    row = conn.execute(sa.select(a).where(
        a.c.user_id == user_id, a.c.service == wanted["service"],
        a.c.path == wanted["path"], a.c.method == wanted["method"])).first()
    if row is not None:
        return AccessRule(row.id, row.service, row.path, row.method)
    rule = AccessRule(wanted.get("id") or new_id(), wanted["service"], wanted["path"],
                      wanted["method"])
    conn.execute(sa.insert(a).values(id=rule.id, user_id=user_id, service=rule.service,
                                     path=rule.path, method=rule.method))
    return rule


def create(conn: Connection, *, name: str, user_id: str, project_id: str | None,
           secret: str, roles: Iterable[Role], description: str | None = None,
           expires_at: dt.datetime | None = None, unrestricted: bool = False,
           access_rules: Sequence[dict[str, str]] = ()) -> AppCred:
    t = s.application_credentials
    if find(conn, user_id, name) is not None:
        raise IdentityConflict(f"An application credential named {name!r} already exists "
                               "for this user.")
    cred_id = new_id()
    try:
        conn.execute(sa.insert(t).values(
            id=cred_id, name=name, user_id=user_id, project_id=project_id,
            secret_hash=hash_password(secret), description=description,
            expires_at=expires_at, unrestricted=unrestricted, created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise IdentityConflict(f"An application credential named {name!r} already "
                               "exists for this user.") from None
    kept = list({r.id: r for r in roles}.values())
    if kept:
        conn.execute(sa.insert(s.application_credential_roles), [
            {"application_credential_id": cred_id, "role_id": r.id} for r in kept])
    rules = [_rule_for(conn, user_id, dict(rule)) for rule in access_rules]
    if rules:
        conn.execute(sa.insert(s.application_credential_access_rules), [
            {"application_credential_id": cred_id, "access_rule_id": r.id}
            for r in {r.id: r for r in rules}.values()])
    made = get(conn, cred_id)
    assert made is not None
    return made


def delete(conn: Connection, cred_id: str) -> bool:
    t = s.application_credentials
    conn.execute(sa.delete(s.application_credential_roles).where(
        s.application_credential_roles.c.application_credential_id == cred_id))
    conn.execute(sa.delete(s.application_credential_access_rules).where(
        s.application_credential_access_rules.c.application_credential_id == cred_id))
    return bool(conn.execute(sa.delete(t).where(t.c.id == cred_id)).rowcount)


def access_rules(conn: Connection, user_id: str, **filters: str | None) -> list[AccessRule]:
    a = s.access_rules
    query = sa.select(a).where(a.c.user_id == user_id).order_by(a.c.id)
    for column, value in filters.items():
        if value is not None:
            query = query.where(a.c[column] == value)
    return [AccessRule(r.id, r.service, r.path, r.method) for r in conn.execute(query)]


def rule_in_use(conn: Connection, rule_id: str) -> bool:
    j = s.application_credential_access_rules
    return conn.execute(sa.select(j.c.access_rule_id).where(j.c.access_rule_id == rule_id)
                        ).first() is not None


def delete_rule(conn: Connection, user_id: str, rule_id: str) -> bool:
    a = s.access_rules
    return bool(conn.execute(sa.delete(a).where(a.c.id == rule_id, a.c.user_id == user_id))
                .rowcount)


def now_precise() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
