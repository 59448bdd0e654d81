"""``/v3/domains``: domains, which hold projects, users and groups. A domain is deleted
only once disabled, and takes its projects, users and groups with it."""

from __future__ import annotations

from typing import Any

import webob

from stratus.identity import assignments, groups, store
from stratus.identity.http.common import (
    Req,
    conflict,
    flag,
    forbidden,
    get_domain,
    links,
    no_content,
    render_domain,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.storage import engine as db


def create_domain(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("domain")
    name = text(body, "name", required=True, max_len=store.DOMAIN_NAME_MAX)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        try:
            made = store.create_domain(conn, name,
                                       text(body, "description", empty_ok=True,
                                            max_len=65_535) or "",
                                       enabled=flag(body, "enabled") is not False,
                                       domain_id=text(body, "explicit_domain_id",
                                                      max_len=64))
        except store.IdentityConflict as exc:
            raise conflict("domain", exc) from None
    return respond({"domain": render_domain(req, made)}, 201)


def list_domains(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = store.list_domains(conn, name=req.param("name"),
                                   enabled=req.flag_param("enabled"))
        if not req.is_admin:
            mine = _own_domains(req, conn)
            found = [d for d in found if d.id in mine]
    return respond({"domains": [render_domain(req, d) for d in found],
                    "links": links(req, "domains")})


def _own_domains(req: Req, conn: Any) -> set[str]:
    """Domains a non-admin may read: its token's, its project's, its own user's, and
    those it holds a role on (Keystone's get_domain rule)."""
    who = req.who
    found = {who.user.domain_id} | assignments.target_ids_of(conn, who.user.id, "domain")
    if who.project is not None:
        found.add(who.project.domain_id)
    if who.domain is not None:
        found.add(who.domain.id)
    return found


def show_domain(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = store.get_domain(conn, req.args["id"]) or \
            store.find_domain(conn, name=req.args["id"])
        if found is None:
            raise IdentityError(404, f"Could not find domain: {req.args['id']}.")
        if not req.is_admin and found.id not in _own_domains(req, conn):
            raise forbidden("only an admin reads a domain it is not in")
    return respond({"domain": render_domain(req, found)})


def update_domain(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("domain")
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = text(body, "name", required=True, max_len=store.DOMAIN_NAME_MAX)
    if "description" in body:
        values["description"] = text(body, "description", empty_ok=True,
                                     max_len=65_535) or ""
    if "enabled" in body:
        values["enabled"] = bool(flag(body, "enabled"))
    with db.write(req.deps.engine) as conn:
        current = get_domain(conn, req.args["id"])
        if current.id == store.DOMAIN_ID and values.get("enabled") is False:
            raise IdentityError(403, "The default domain cannot be disabled here (the "
                                "deployment's own users live in it).")
        try:
            store.update_domain(conn, current.id, **values)
        except store.IdentityConflict as exc:
            raise conflict("domain", exc) from None
        found = get_domain(conn, current.id)
    return respond({"domain": render_domain(req, found)})


def delete_domain(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        found = get_domain(conn, req.args["id"])
        if found.enabled:
            raise IdentityError(403, "Cannot delete a domain that is enabled, please "
                                "disable it first.")
        left = {p.id: p for p in store.list_projects(conn, domain_id=found.id)}
        while left:   # leaves first, so no project outlives its parent
            parents = {p.parent_id for p in left.values()}
            for leaf in [i for i in left if i not in parents]:
                store.delete_project(conn, leaf)
                del left[leaf]
        for user in store.list_users(conn, domain_id=found.id):
            store.delete_user(conn, user.id)
        for group in groups.listing(conn, domain_id=found.id):
            groups.delete(conn, group.id)
        for role in store.list_roles(conn, domain_id=found.id):
            store.delete_role(conn, role.id)
        assignments.forget_target(conn, "domain", found.id)
        store.delete_domain_row(conn, found.id)
    return no_content()
