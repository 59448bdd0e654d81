"""Authentication: a ``POST /v3/auth/tokens`` body in, a token and its body out; and the
validation of a token presented later.

Methods: ``password`` (a user by id, or by name in a domain given by id or name),
``token`` (re-scoping a token one already has) and ``application_credential`` (by id,
or by name with its user; the token is scoped to the credential's project with the
credential's roles that the user still holds). Scope: a project (by id, or by name in a
domain), a domain, the system (``{"system": {"all": true}}``), or none (an unscoped
token: no roles, no catalog), as Keystone does. Roles are effective roles: direct, from
groups, inherited, and implied.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stratus.identity import appcreds, assignments, endpoints, store
from stratus.identity.model import Domain, Project, Role, User
from stratus.identity.tokens import BadToken, TokenCodec, TokenData

METHODS = ("password", "token", "application_credential")
NOT_AUTHENTICATED = "The request you have made requires authentication."


class AuthFailed(Exception):
    """401: wrong password, unknown or disabled user, a bad token."""


class BadAuthRequest(Exception):
    """400: the body is not an auth request."""


class NotAuthorizedForScope(Exception):
    """401 in Keystone: the user has no role on the target asked for."""


@dataclass(frozen=True)
class Validated:
    token: TokenData
    user: User
    project: Project | None
    roles: list[Role]
    domain: Domain | None = None          # a domain-scoped token's domain
    app_cred: appcreds.AppCred | None = None

    @property
    def system(self) -> bool:
        return self.token.system

    @property
    def role_names(self) -> set[str]:
        return {r.name for r in self.roles}


def _obj(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadAuthRequest(f"{what} must be an object")
    return value


def _domain(conn: Connection, given: Any) -> Domain:
    """The domain an auth request names ({"id": ...} or {"name": ...}), enabled."""
    given = _obj(given, "domain")
    found = store.find_domain(conn, domain_id=str(given["id"])) if given.get("id") else \
        store.find_domain(conn, name=str(given["name"])) if given.get("name") else None
    if found is None or not found.enabled:
        raise AuthFailed(NOT_AUTHENTICATED)
    return found


def _named_user(conn: Connection, given: Mapping[str, Any]) -> User:
    """A user by id, or by name in the domain given (the default one if none is)."""
    if given.get("id"):
        user = store.get_user(conn, str(given["id"]))
    elif isinstance(given.get("name"), str):
        domain = _domain(conn, given["domain"]) if given.get("domain") is not None else \
            store.get_domain(conn, store.DOMAIN_ID)
        user = store.find_user(conn, given["name"], by_id=False,
                               domain_id=domain.id if domain else store.DOMAIN_ID)
    else:
        raise BadAuthRequest("a user needs an id or a name")
    if user is None or not user.enabled:
        raise AuthFailed(NOT_AUTHENTICATED)
    domain = store.get_domain(conn, user.domain_id)
    if domain is None or not domain.enabled:
        raise AuthFailed(NOT_AUTHENTICATED)
    return user


def authenticate(conn: Connection, codec: TokenCodec, body: Any, subject: str | None
                 ) -> tuple[str, Validated]:
    """Check the credentials of an auth request; ``subject`` is the caller's
    ``X-Auth-Token`` (for the token method when the body names none)."""
    auth = _obj(_obj(body, "the body").get("auth"), "auth")
    identity = _obj(auth.get("identity"), "auth.identity")
    methods = identity.get("methods")
    if not isinstance(methods, list) or not methods or not all(m in METHODS for m in methods):
        raise BadAuthRequest("auth.identity.methods must be a list of "
                             f"{', '.join(repr(m) for m in METHODS)}")
    if len(set(methods)) > 1:
        raise AuthFailed("Only one of the methods password, token and "
                         "application_credential may be used at once here.")
    method = methods[0]
    scope = auth.get("scope")
    if method == "application_credential":
        if scope not in (None, "unscoped"):
            raise AuthFailed("An application credential's token is scoped to its project; "
                             "ask for no scope.")
        return _with_app_cred(conn, codec, _obj(identity.get("application_credential"),
                                                "application_credential"))
    expires_at: dt.datetime | None = None
    app_cred_id = None
    if method == "password":
        password = _obj(identity.get("password"), "password")
        given = _obj(password.get("user"), "password.user")
        secret = given.get("password")
        if not isinstance(secret, str):
            raise BadAuthRequest("password.user.password must be a string")
        user = _named_user(conn, given)
        if not store.check_password(secret, store.password_hash(conn, user.id)):
            raise AuthFailed(NOT_AUTHENTICATED)
    else:
        token_body = identity.get("token") or {}
        given_token = _obj(token_body, "token").get("id") or subject
        if not given_token:
            raise AuthFailed(NOT_AUTHENTICATED)
        earlier = validate(conn, codec, str(given_token), check_roles=False)
        if earlier.app_cred is not None:
            raise AuthFailed("A token made from an application credential cannot be "
                             "re-scoped.")
        user, expires_at = earlier.user, earlier.token.expires_at   # lives no longer
        # A re-scoped token keeps how its user first proved who it is.
        methods = list(dict.fromkeys([*earlier.token.methods, "token"]))
    if scope is None and method == "password":
        scope = _default_scope(conn, user)
    return _scoped(conn, codec, user, tuple(methods), scope, expires_at, app_cred_id)


def _default_scope(conn: Connection, user: User) -> dict[str, Any] | None:
    """Keystone scopes a password token asked without a scope to the user's default
    project, when the user holds a role there; else the token is unscoped."""
    project = store.get_project(conn, user.default_project_id) \
        if user.default_project_id else None
    if project is None or not project.enabled or \
            not assignments.effective_roles(conn, user.id, "project", project.id):
        return None
    return {"project": {"id": project.id}}


def _scoped(conn: Connection, codec: TokenCodec, user: User, methods: tuple[str, ...],
            scope: Any, expires_at: dt.datetime | None, app_cred_id: str | None
            ) -> tuple[str, Validated]:
    project, domain, system = _scope(conn, scope)
    roles: list[Role] = []
    if project is not None:
        roles = assignments.effective_roles(conn, user.id, "project", project.id)
        if not roles:
            raise NotAuthorizedForScope(f"User {user.id} has no access to project "
                                        f"{project.id}")
    elif domain is not None:
        roles = assignments.effective_roles(conn, user.id, "domain", domain.id)
        if not roles:
            raise NotAuthorizedForScope(f"User {user.id} has no access to domain {domain.id}")
    elif system:
        roles = assignments.effective_roles(conn, user.id, "system", assignments.SYSTEM)
        if not roles:
            raise NotAuthorizedForScope(f"User {user.id} has no access to the system")
    token, data = codec.issue(user.id, project.id if project else None, methods,
                              expires_at=expires_at, domain_id=domain.id if domain else None,
                              system=system, app_cred_id=app_cred_id)
    return token, Validated(data, user, project, roles, domain)


def _scope(conn: Connection, scope: Any) -> tuple[Project | None, Domain | None, bool]:
    if scope is None or scope == "unscoped":
        return None, None, False
    scope = _obj(scope, "auth.scope")
    if "system" in scope:
        if _obj(scope["system"], "auth.scope.system").get("all") is not True:
            raise BadAuthRequest('a system scope is {"system": {"all": true}}')
        return None, None, True
    if "domain" in scope:
        return None, _domain(conn, scope["domain"]), False
    if "OS-TRUST:trust" in scope:
        raise AuthFailed("Trusts are not served here.")
    project = _obj(scope.get("project"), "auth.scope.project")
    if project.get("id"):
        found = store.get_project(conn, str(project["id"]))
    elif project.get("name"):
        domain = _domain(conn, project["domain"]) if project.get("domain") is not None \
            else store.get_domain(conn, store.DOMAIN_ID)
        found = store.find_project(conn, str(project["name"]), by_id=False,
                                   domain_id=domain.id if domain else store.DOMAIN_ID)
    else:
        raise BadAuthRequest("auth.scope.project needs an id or a name")
    if found is None or not found.enabled:
        raise AuthFailed(f"Could not find project: {project.get('id') or project.get('name')}.")
    owner = store.get_domain(conn, found.domain_id)
    if owner is None or not owner.enabled:
        raise AuthFailed(f"Could not find project: {found.id}.")
    return found, None, False


def _with_app_cred(conn: Connection, codec: TokenCodec, given: Mapping[str, Any]
                   ) -> tuple[str, Validated]:
    secret = given.get("secret")
    if not isinstance(secret, str):
        raise BadAuthRequest("application_credential.secret must be a string")
    if given.get("id"):
        cred = appcreds.get(conn, str(given["id"]))
    elif given.get("name"):
        owner = _named_user(conn, _obj(given.get("user"), "application_credential.user"))
        cred = appcreds.find(conn, owner.id, str(given["name"]))
    else:
        raise BadAuthRequest("application_credential needs an id, or a name and a user")
    if cred is None or not store.check_password(secret, appcreds.secret_hash(conn, cred.id)):
        raise AuthFailed(NOT_AUTHENTICATED)
    if cred.expired(appcreds.now_precise()):
        raise AuthFailed("The application credential has expired.")
    user = _named_user(conn, {"id": cred.user_id})
    project = store.get_project(conn, cred.project_id) if cred.project_id else None
    if project is None or not project.enabled:
        raise AuthFailed(NOT_AUTHENTICATED)
    roles = _app_cred_roles(conn, cred, user.id)
    expires = cred.expires_at.replace(microsecond=0) if cred.expires_at else None
    token, data = codec.issue(user.id, project.id, ("application_credential",),
                              expires_at=expires, app_cred_id=cred.id)
    return token, Validated(data, user, project, roles, None, cred)


def _app_cred_roles(conn: Connection, cred: appcreds.AppCred, user_id: str) -> list[Role]:
    """The credential's roles the user still holds on its project (Keystone's rule)."""
    held = {r.id for r in assignments.effective_roles(conn, user_id, "project",
                                                      cred.project_id or "")}
    roles = [r for r in cred.roles if r.id in held]
    if not roles:
        raise AuthFailed("The application credential's user holds none of its roles on "
                         "its project any more.")
    return roles


def validate(conn: Connection, codec: TokenCodec, token: str, *,
             check_roles: bool = True) -> Validated:
    """A token presented to us: who it is, where, with which roles now."""
    try:
        data = codec.read(token)
    except BadToken as exc:
        raise AuthFailed(str(exc)) from None
    if store.is_revoked(conn, data.audit_id, data.user_id, data.issued_at):
        raise AuthFailed("The token has been revoked.")
    user = store.get_user(conn, data.user_id)
    if user is None or not user.enabled:
        raise AuthFailed("The token's user is gone or disabled.")
    user_domain = store.get_domain(conn, user.domain_id)
    if user_domain is None or not user_domain.enabled:
        raise AuthFailed("The token's user is in a disabled domain.")
    project = store.get_project(conn, data.project_id) if data.project_id else None
    if data.project_id and (project is None or not project.enabled):
        raise AuthFailed("The token's project is gone or disabled.")
    domain = store.get_domain(conn, data.domain_id) if data.domain_id else None
    if data.domain_id and (domain is None or not domain.enabled):
        raise AuthFailed("The token's domain is gone or disabled.")
    cred = None
    if data.app_cred_id:
        cred = appcreds.get(conn, data.app_cred_id)
        if cred is None or cred.expired(appcreds.now_precise()):
            raise AuthFailed("The token's application credential is gone or expired.")
        roles = _app_cred_roles(conn, cred, user.id)
    elif project is not None:
        roles = assignments.effective_roles(conn, user.id, "project", project.id)
    elif domain is not None:
        roles = assignments.effective_roles(conn, user.id, "domain", domain.id)
    elif data.system:
        roles = assignments.effective_roles(conn, user.id, "system", assignments.SYSTEM)
    else:
        roles = []
    scoped = project is not None or domain is not None or data.system
    if check_roles and scoped and not roles:
        raise AuthFailed("The token's user has no role on its scope any more.")
    return Validated(data, user, project, roles, domain, cred)


def _when(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def token_body(conn: Connection, found: Validated, with_catalog: bool) -> dict[str, Any]:
    user_domain = store.get_domain(conn, found.user.domain_id)
    body: dict[str, Any] = {
        "methods": list(found.token.methods),
        "user": {"id": found.user.id, "name": found.user.name,
                 "domain": {"id": found.user.domain_id,
                            "name": user_domain.name if user_domain else found.user.domain_id},
                 "password_expires_at": None},
        "audit_ids": [found.token.audit_id],
        "issued_at": _when(found.token.issued_at),
        "expires_at": _when(found.token.expires_at),
    }
    scoped = True
    if found.project is not None:
        owner = store.get_domain(conn, found.project.domain_id)
        body["project"] = {"id": found.project.id, "name": found.project.name,
                           "domain": {"id": found.project.domain_id,
                                      "name": owner.name if owner else found.project.domain_id}}
        body["is_domain"] = False
    elif found.domain is not None:
        body["domain"] = {"id": found.domain.id, "name": found.domain.name}
    elif found.system:
        body["system"] = {"all": True}
    else:
        scoped = False
    if scoped:
        body["roles"] = [{"id": r.id, "name": r.name} for r in found.roles]
        if with_catalog:
            body["catalog"] = endpoints.token_catalog(
                conn, user_id=found.user.id,
                project_id=found.project.id if found.project else None)
    if found.app_cred is not None:
        cred = found.app_cred
        body["application_credential"] = {"id": cred.id, "name": cred.name,
                                          "restricted": not cred.unrestricted}
        if cred.access_rules:
            body["application_credential"]["access_rules"] = [
                {"id": r.id, "service": r.service, "path": r.path, "method": r.method}
                for r in cred.access_rules]
    return {"token": body}
