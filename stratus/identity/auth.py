"""Authentication: a ``POST /v3/auth/tokens`` body in, a token and its body out.

Methods: ``password`` (a user by id, or by name in the default domain) and ``token``
(re-scoping a token one already has). Scope: a project by id, or by name in the default
domain; none gives an unscoped token (no roles, no catalog), as Keystone does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stratus.identity import store
from stratus.identity.catalog import Catalog
from stratus.identity.tokens import BadToken, TokenCodec, TokenData


class AuthFailed(Exception):
    """401: wrong password, unknown or disabled user, a bad token."""


class BadAuthRequest(Exception):
    """400: the body is not an auth request."""


class NotAuthorizedForScope(Exception):
    """401 in Keystone: the user has no role on the project asked for."""


@dataclass(frozen=True)
class Validated:
    token: TokenData
    user: store.User
    project: store.Project | None
    roles: list[store.Role]


def _obj(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadAuthRequest(f"{what} must be an object")
    return value


def _domain_ok(entity: Mapping[str, Any]) -> None:
    domain = entity.get("domain")
    if domain is None:
        return
    domain = _obj(domain, "domain")
    if domain.get("id") not in (None, store.DOMAIN_ID) or \
            domain.get("name") not in (None, store.DOMAIN_NAME):
        raise AuthFailed("The request you have made requires authentication.")


def authenticate(conn: Connection, codec: TokenCodec, body: Any, subject: str | None
                 ) -> tuple[str, Validated]:
    """Check the credentials of an auth request; ``subject`` is the caller's
    ``X-Auth-Token`` (for the token method when the body names none)."""
    auth = _obj(_obj(body, "the body").get("auth"), "auth")
    identity = _obj(auth.get("identity"), "auth.identity")
    methods = identity.get("methods")
    if not isinstance(methods, list) or not methods or \
            not all(m in ("password", "token") for m in methods):
        raise BadAuthRequest("auth.identity.methods must be a list of 'password' or 'token'")
    expires_at: dt.datetime | None = None
    if "password" in methods:
        user = _password_user(conn, _obj(identity.get("password"), "password"))
    else:
        token_body = identity.get("token") or {}
        given = _obj(token_body, "token").get("id") or subject
        if not given:
            raise AuthFailed("The request you have made requires authentication.")
        try:
            earlier = codec.read(str(given))
        except BadToken as exc:
            raise AuthFailed(str(exc)) from None
        if store.is_revoked(conn, earlier.audit_id):
            raise AuthFailed("The token has been revoked.")
        found = store.get_user(conn, earlier.user_id)
        if found is None or not found.enabled:
            raise AuthFailed("The request you have made requires authentication.")
        user, expires_at = found, earlier.expires_at   # a re-scoped token lives no longer
    project = _scope(conn, user, auth.get("scope"))
    roles = store.roles_of(conn, user.id, project.id) if project else []
    if project is not None and not roles:
        raise NotAuthorizedForScope(
            f"User {user.id} has no access to project {project.id}")
    token, data = codec.issue(user.id, project.id if project else None, tuple(methods),
                              expires_at=expires_at)
    return token, Validated(data, user, project, roles)


def _password_user(conn: Connection, password: Mapping[str, Any]) -> store.User:
    given = _obj(password.get("user"), "password.user")
    _domain_ok(given)
    secret = given.get("password")
    if not isinstance(secret, str):
        raise BadAuthRequest("password.user.password must be a string")
    key = given.get("id") or given.get("name")
    if not isinstance(key, str):
        raise BadAuthRequest("password.user needs an id or a name")
    user = store.get_user(conn, key) if given.get("id") else \
        next(iter(store.list_users(conn, name=key)), None)
    if user is None or not user.enabled or \
            not store.check_password(secret, store.password_hash(conn, user.id)):
        raise AuthFailed("The request you have made requires authentication.")
    return user


def _scope(conn: Connection, user: store.User, scope: Any) -> store.Project | None:
    if scope is None or scope == "unscoped":
        return None
    scope = _obj(scope, "auth.scope")
    if "system" in scope or "domain" in scope:
        raise BadAuthRequest("only project scope is supported (no system or domain scope)")
    project = _obj(scope.get("project"), "auth.scope.project")
    _domain_ok(project)
    if project.get("id"):
        found = store.get_project(conn, str(project["id"]))
    elif project.get("name"):
        found = next(iter(store.list_projects(conn, name=str(project["name"]))), None)
    else:
        raise BadAuthRequest("auth.scope.project needs an id or a name")
    if found is None or not found.enabled:
        raise AuthFailed(f"Could not find project: {project.get('id') or project.get('name')}.")
    return found


def validate(conn: Connection, codec: TokenCodec, token: str) -> Validated:
    """A token presented to us: who it is, where, with which roles now."""
    try:
        data = codec.read(token)
    except BadToken as exc:
        raise AuthFailed(str(exc)) from None
    if store.is_revoked(conn, data.audit_id):
        raise AuthFailed("The token has been revoked.")
    user = store.get_user(conn, data.user_id)
    if user is None or not user.enabled:
        raise AuthFailed("The token's user is gone or disabled.")
    project = store.get_project(conn, data.project_id) if data.project_id else None
    if data.project_id and (project is None or not project.enabled):
        raise AuthFailed("The token's project is gone or disabled.")
    roles = store.roles_of(conn, user.id, project.id) if project else []
    if project is not None and not roles:
        raise AuthFailed("The token's user has no role on its project any more.")
    return Validated(data, user, project, roles)


def _when(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def token_body(found: Validated, catalog: Catalog | None) -> dict[str, Any]:
    domain = {"id": store.DOMAIN_ID, "name": store.DOMAIN_NAME}
    body: dict[str, Any] = {
        "methods": list(found.token.methods),
        "user": {"id": found.user.id, "name": found.user.name, "domain": domain,
                 "password_expires_at": None},
        "audit_ids": [found.token.audit_id],
        "issued_at": _when(found.token.issued_at),
        "expires_at": _when(found.token.expires_at),
    }
    if found.project is not None:
        body["project"] = {"id": found.project.id, "name": found.project.name,
                           "domain": domain}
        body["is_domain"] = False
        body["roles"] = [{"id": r.id, "name": r.name} for r in found.roles]
        if catalog is not None:
            body["catalog"] = catalog.render()
    return {"token": body}
