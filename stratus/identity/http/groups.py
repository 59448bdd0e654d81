"""``/v3/groups``: groups of users in a domain, and who is in them."""

from __future__ import annotations

from typing import Any

import webob

from stratus.identity import groups
from stratus.identity.http.common import (
    Req,
    conflict,
    get_domain,
    get_user,
    links,
    no_content,
    not_found,
    render_user,
    respond,
    text,
)
from stratus.identity.model import DOMAIN_ID, IdentityConflict
from stratus.storage import engine as db


def render_group(req: Req, g: groups.Group) -> dict[str, Any]:
    return {"id": g.id, "name": g.name, "domain_id": g.domain_id,
            "description": g.description, "links": {"self": f"{req.url}/groups/{g.id}"}}


def _get(conn: Any, group_id: str) -> groups.Group:
    found = groups.get(conn, group_id)
    if found is None:
        raise not_found("group", group_id)
    return found


def create_group(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("group")
    name = text(body, "name", required=True, max_len=groups.NAME_MAX)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        domain_id = text(body, "domain_id", max_len=64) or \
            (req.who.project.domain_id if req.who.project else DOMAIN_ID)
        get_domain(conn, domain_id)
        try:
            made = groups.create(conn, name, domain_id,
                                 text(body, "description", empty_ok=True,
                                      max_len=65_535) or "")
        except IdentityConflict as exc:
            raise conflict("group", exc) from None
    return respond({"group": render_group(req, made)}, 201)


def list_groups(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        found = groups.listing(conn, name=req.param("name"), domain_id=req.param("domain_id"))
    return respond({"groups": [render_group(req, g) for g in found],
                    "links": links(req, "groups")})


def show_group(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        return respond({"group": render_group(req, _get(conn, req.args["id"]))})


def update_group(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("group")
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = text(body, "name", required=True, max_len=groups.NAME_MAX)
    if "description" in body:
        values["description"] = text(body, "description", empty_ok=True,
                                      max_len=65_535) or ""
    with db.write(req.deps.engine) as conn:
        current = _get(conn, req.args["id"])
        try:
            changed = groups.update(conn, current, **values)
        except IdentityConflict as exc:
            raise conflict("group", exc) from None
    return respond({"group": render_group(req, changed)})


def delete_group(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not groups.delete(conn, req.args["id"]):
            raise not_found("group", req.args["id"])
    return no_content()


def group_users(req: Req) -> webob.Response:
    req.require_admin()
    from stratus.identity import store

    with db.read(req.deps.engine) as conn:
        _get(conn, req.args["id"])
        found = store.list_users(conn, ids=groups.members(conn, req.args["id"]))
    return respond({"users": [render_user(req, u) for u in found],
                    "links": links(req, f"groups/{req.args['id']}/users")})


def add_user(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        _get(conn, req.args["id"])
        get_user(conn, req.args["user"])
        groups.add_member(conn, req.args["id"], req.args["user"])
    return no_content()


def check_user(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        _get(conn, req.args["id"])
        get_user(conn, req.args["user"])
        if not groups.is_member(conn, req.args["id"], req.args["user"]):
            raise not_found("membership", f"user {req.args['user']} in group "
                            f"{req.args['id']}")
    return no_content()


def remove_user(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        _get(conn, req.args["id"])
        get_user(conn, req.args["user"])
        if not groups.remove_member(conn, req.args["id"], req.args["user"]):
            raise not_found("membership", f"user {req.args['user']} in group "
                            f"{req.args['id']}")
    return no_content()
