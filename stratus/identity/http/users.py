"""``/v3/users``: users in domains, their passwords, projects and groups.

Renaming a user to a name its domain already has is 409 (it was a 500); changing a
password, by the user or an admin, revokes every token the user held (Keystone's
revocation by user)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import webob

from stratus.identity import assignments, groups, store
from stratus.identity.http.common import (
    Req,
    conflict,
    extra_of,
    flag,
    get_domain,
    get_project,
    get_user,
    links,
    no_content,
    render_project,
    render_user,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.identity.http.groups import render_group
from stratus.storage import engine as db

KNOWN = {"name", "domain_id", "password", "default_project_id", "enabled", "options",
         "password_expires_at", "federated"}


def _password(body: Mapping[str, Any]) -> str | None:
    value = body.get("password")
    if value is not None and (not isinstance(value, str) or len(value) > 4096):
        raise IdentityError(400, "Invalid input for field 'password': a string is "
                            "expected.")
    return value


def create_user(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("user")
    name = text(body, "name", required=True, max_len=store.USER_NAME_MAX)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        domain_id = text(body, "domain_id", max_len=64) or \
            (req.who.project.domain_id if req.who.project else store.DOMAIN_ID)
        get_domain(conn, domain_id)
        project = text(body, "default_project_id", max_len=64)
        if project is not None:
            get_project(conn, project)
        try:
            made = store.create_user(conn, name, _password(body), project,
                                     enabled=flag(body, "enabled") is not False,
                                     domain_id=domain_id, extra=extra_of(body, KNOWN))
        except store.IdentityConflict as exc:
            raise conflict("user", exc) from None
    return respond({"user": render_user(req, made)}, 201)


def list_users(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        found = store.list_users(conn, name=req.param("name"),
                                 domain_id=req.param("domain_id"),
                                 enabled=req.flag_param("enabled"))
    return respond({"users": [render_user(req, u) for u in found],
                    "links": links(req, "users")})


def show_user(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["id"])
    with db.read(req.deps.engine) as conn:
        found = get_user(conn, req.args["id"])
    return respond({"user": render_user(req, found)})


def update_user(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("user")
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = text(body, "name", required=True, max_len=store.USER_NAME_MAX)
    if "enabled" in body:
        values["enabled"] = bool(flag(body, "enabled"))
    if "default_project_id" in body:
        values["default_project_id"] = text(body, "default_project_id", max_len=64)
    password = _password(body)
    with db.write(req.deps.engine) as conn:
        current = get_user(conn, req.args["id"])
        if body.get("domain_id") not in (None, current.domain_id):
            raise IdentityError(400, "A user cannot move to another domain.")
        if values.get("default_project_id"):
            get_project(conn, values["default_project_id"])
        extra = extra_of(body, KNOWN)
        if extra:
            values["extra"] = {**current.extra, **extra}
        try:
            store.update_user(conn, current.id, password=password, **values)
        except store.IdentityConflict as exc:
            raise conflict("user", exc) from None
        if password is not None:
            store.revoke_user_tokens(conn, current.id, store.utcnow())
        found = get_user(conn, current.id)
    return respond({"user": render_user(req, found)})


def change_password(req: Req) -> webob.Response:
    """``POST /v3/users/{id}/password``: a user changing its own, proving the old one."""
    body = req.member("user")
    new, old = _password(body), body.get("original_password")
    if new is None or not isinstance(old, str):
        raise IdentityError(400, "'password' and 'original_password' are required.")
    req.require_self_or_admin(req.args["id"])
    with db.write(req.deps.engine) as conn:
        user = get_user(conn, req.args["id"])
        if not store.check_password(old, store.password_hash(conn, user.id)):
            raise IdentityError(401, "The original password is not the user's password.")
        store.update_user(conn, user.id, password=new)
        store.revoke_user_tokens(conn, user.id, store.utcnow())
    return no_content()


def delete_user(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not store.delete_user(conn, req.args["id"]):
            raise IdentityError(404, f"Could not find user: {req.args['id']}.")
    return no_content()


def user_projects(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["id"])
    with db.read(req.deps.engine) as conn:
        get_user(conn, req.args["id"])
        ids = assignments.target_ids_of(conn, req.args["id"], "project")
        found = store.list_projects(conn, ids=sorted(ids))
    return respond({"projects": [render_project(req, p) for p in found],
                    "links": links(req, f"users/{req.args['id']}/projects")})


def user_groups(req: Req) -> webob.Response:
    req.require_self_or_admin(req.args["id"])
    with db.read(req.deps.engine) as conn:
        get_user(conn, req.args["id"])
        found = groups.listing(conn, user_id=req.args["id"])
    return respond({"groups": [render_group(req, g) for g in found],
                    "links": links(req, f"users/{req.args['id']}/groups")})
