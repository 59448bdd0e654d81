"""``/v3/users/{id}/application_credentials`` and ``/v3/users/{id}/access_rules``.

A user makes its own application credentials, from a token scoped to the project the
credential is for; their roles are some of the token's (all of them by default, with
what they imply), never more. The secret is in the create answer only."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import webob

from stratus.identity import appcreds, assignments, store
from stratus.identity.http.common import (
    Req,
    conflict,
    flag,
    forbidden,
    links,
    no_content,
    not_found,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.storage import engine as db


def _when(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _rule(req: Req, user_id: str, r: appcreds.AccessRule) -> dict[str, Any]:
    return {"id": r.id, "service": r.service, "path": r.path, "method": r.method,
            "links": {"self": f"{req.url}/users/{user_id}/access_rules/{r.id}"}}


def render(req: Req, c: appcreds.AppCred, secret: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": c.id, "name": c.name, "description": c.description, "user_id": c.user_id,
        "project_id": c.project_id, "expires_at": _when(c.expires_at),
        "unrestricted": c.unrestricted, "system": None,
        "roles": [{"id": r.id, "name": r.name, "domain_id": r.domain_id} for r in c.roles],
        "access_rules": [{"id": r.id, "service": r.service, "path": r.path,
                          "method": r.method} for r in c.access_rules],
        "links": {"self": f"{req.url}/users/{c.user_id}/application_credentials/{c.id}"}}
    if secret is not None:
        body["secret"] = secret
    return body


def _expiry(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise IdentityError(400, "Invalid input for field 'expires_at': a time is expected.")
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise IdentityError(400, f"Invalid input for field 'expires_at': {value!r} is not "
                            "an ISO 8601 time.") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    if moment <= appcreds.now_precise():
        raise IdentityError(400, "The expiration time must be in the future.")
    return moment


def _access_rules(value: Any) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise IdentityError(400, "'access_rules' must be a list.")
    rules = []
    for rule in value:
        if not isinstance(rule, Mapping):
            raise IdentityError(400, "Each access rule is an object.")
        if set(rule) == {"id"}:
            rules.append({"id": str(rule["id"])})
            continue
        path, service, method = rule.get("path"), rule.get("service"), rule.get("method")
        if not isinstance(path, str) or not path.startswith("/") or len(path) > 225:
            raise IdentityError(400, f"Invalid access rule path {path!r}.")
        if not isinstance(service, str) or not service or len(service) > 64:
            raise IdentityError(400, f"Invalid access rule service {service!r}.")
        if method not in appcreds.METHODS:
            raise IdentityError(400, f"Invalid access rule method {method!r} (one of "
                                f"{', '.join(appcreds.METHODS)}).")
        rules.append({"service": service, "path": path, "method": method,
                      **({"id": str(rule["id"])} if rule.get("id") else {})})
    return rules


def create(req: Req) -> webob.Response:
    req.require_unrestricted()
    who = req.who
    if who.user.id != req.args["user"]:
        raise forbidden("Cannot create an application credential for another user")
    if who.project is None:
        raise IdentityError(400, "An application credential is made from a token scoped "
                            "to the project it is for.")
    body = req.member("application_credential")
    name = text(body, "name", required=True)
    assert name is not None
    secret = text(body, "secret", max_len=4096) or appcreds.new_secret()
    unrestricted = flag(body, "unrestricted") is True
    wanted_rules = _access_rules(body.get("access_rules"))
    with db.write(req.deps.engine) as conn:
        roles = list(who.roles)
        if body.get("roles"):
            roles = _requested_roles(conn, body["roles"], {r.id for r in who.roles})
        for wanted in wanted_rules:
            if set(wanted) == {"id"} and not appcreds.access_rules(conn, who.user.id,
                                                                   id=wanted["id"]):
                raise not_found("access rule", wanted["id"])
        try:
            made = appcreds.create(conn, name=name, user_id=who.user.id,
                                   project_id=who.project.id, secret=secret, roles=roles,
                                   description=text(body, "description", empty_ok=True,
                                                    max_len=65_535),
                                   expires_at=_expiry(body.get("expires_at")),
                                   unrestricted=unrestricted, access_rules=wanted_rules)
        except store.IdentityConflict as exc:
            raise conflict("application credential", exc) from None
    return respond({"application_credential": render(req, made, secret)}, 201)


def _requested_roles(conn: Any, wanted: Any, held: set[str]) -> list[store.Role]:
    """The roles asked for (by id or name) and what they imply; each must be in the
    caller's token."""
    if not isinstance(wanted, list):
        raise IdentityError(400, "'roles' must be a list of {\"id\"} or {\"name\"}.")
    found: list[store.Role] = []
    for item in wanted:
        key = item.get("id") or item.get("name") if isinstance(item, Mapping) else None
        role = store.find_role(conn, str(key)) if key else None
        if role is None:
            raise IdentityError(404, f"Could not find role: {key}.")
        found.append(role)
    every = assignments.expand(conn, {r.id for r in found})
    if any(r.id not in held for r in every):
        raise IdentityError(400, "Invalid application credential: Cannot create an "
                            "application credential with unassigned role")
    return every


def listing(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["user"])
    with db.read(req.deps.engine) as conn:
        found = appcreds.listing(conn, req.args["user"], req.param("name"))
    return respond({"application_credentials": [render(req, c) for c in found],
                    "links": links(req, f"users/{req.args['user']}/application_credentials")})


def _own(req: Req, conn: Any) -> appcreds.AppCred:
    found = appcreds.get(conn, req.args["id"])
    if found is None or found.user_id != req.args["user"]:
        raise not_found("application credential", req.args["id"])
    return found


def show(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["user"])
    with db.read(req.deps.engine) as conn:
        return respond({"application_credential": render(req, _own(req, conn))})


def delete(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["user"])
    req.require_unrestricted()
    with db.write(req.deps.engine) as conn:
        appcreds.delete(conn, _own(req, conn).id)
    return no_content()


# ---- access rules ---------------------------------------------------------------------------

def list_rules(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["user"])
    with db.read(req.deps.engine) as conn:
        found = appcreds.access_rules(conn, req.args["user"], service=req.param("service"),
                                      path=req.param("path"), method=req.param("method"))
    return respond({"access_rules": [_rule(req, req.args["user"], r) for r in found],
                    "links": links(req, f"users/{req.args['user']}/access_rules")})


def show_rule(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["user"])
    with db.read(req.deps.engine) as conn:
        found = appcreds.access_rules(conn, req.args["user"], id=req.args["id"])
    if not found:
        raise not_found("access rule", req.args["id"])
    return respond({"access_rule": _rule(req, req.args["user"], found[0])})


def delete_rule(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["user"])
    with db.write(req.deps.engine) as conn:
        if not appcreds.access_rules(conn, req.args["user"], id=req.args["id"]):
            raise not_found("access rule", req.args["id"])
        if appcreds.rule_in_use(conn, req.args["id"]):
            raise IdentityError(403, f"Access rule {req.args['id']} is still used by an "
                                "application credential.")
        appcreds.delete_rule(conn, req.args["user"], req.args["id"])
    return no_content()
