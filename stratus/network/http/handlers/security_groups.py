"""/v2.0/security-groups and /v2.0/security-group-rules (the security-group extension).

A project's first look at its groups or rules makes its default group (a write, done
only when the group is missing)."""

from __future__ import annotations

from typing import Any

import webob
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import secgroup_rules as rules
from stratus.network.http import attrs
from stratus.network.http.wsgi import Req, created, empty_response, listing, shown, timestamp
from stratus.network.store import security_groups as store
from stratus.network.store import tags
from stratus.storage import engine as db


def render_rule(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "security_group_id": row["security_group_id"],
            "project_id": row["project_id"], "tenant_id": row["project_id"],
            "description": row["description"], "direction": row["direction"],
            "ethertype": row["ethertype"], "protocol": row["protocol"],
            "port_range_min": row["port_range_min"], "port_range_max": row["port_range_max"],
            "remote_ip_prefix": row["remote_ip_prefix"],
            "normalized_cidr": rules.normalized(row["remote_ip_prefix"]),
            "remote_group_id": row["remote_group_id"],
            "remote_address_group_id": row["remote_address_group_id"],
            "belongs_to_default_sg": row["belongs_to_default_sg"],
            "revision_number": row["revision_number"],
            "created_at": timestamp(row["created_at"]),
            "updated_at": timestamp(row["updated_at"] or row["created_at"])}


def render_group(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "project_id": row["project_id"], "tenant_id": row["project_id"],
            "stateful": row["stateful"],
            "security_group_rules": [render_rule(r) for r in row["rules"]],
            "tags": list(row.get("tags", ())), "revision_number": row["revision_number"],
            "created_at": timestamp(row["created_at"]),
            "updated_at": timestamp(row["updated_at"] or row["created_at"])}


def _ensure_default(req: Req, filters: dict[str, list[str]]) -> None:
    """The default group of the project asked about (the caller's, or for an admin the
    one filtered on), made if missing."""
    asked = (filters.get("project_id") or filters.get("tenant_id") or [""])[0]
    project = asked if req.is_admin and asked else req.ctx.project_id
    if not project:
        return
    with db.read(req.deps.engine) as conn:
        if store.default_group(conn, project) is not None:
            return
    with db.write(req.deps.engine) as conn:
        store.ensure_default(conn, project)


def _owned(req: Req, conn: Connection, group_id: str) -> dict[str, Any]:
    group = store.visible_group(conn, group_id, req.scope)
    if req.scope is not None and group["project_id"] != req.scope:
        raise errors.Forbidden("(rule:update_security_group) is disallowed by policy")
    return group


def list_groups(req: Req) -> webob.Response:
    filters = req.filters((*store.GROUP_COLUMNS, "shared"))
    _ensure_default(req, filters)
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, store.list_groups(conn, filters, req.scope))
    rest = {k: v for k, v in filters.items() if k not in store.GROUP_COLUMNS}
    return listing(req, "security_groups", [render_group(r) for r in rows], rest)


def show_group(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [store.visible_group(conn, req.arg("id"), req.scope)])[0]
    return shown(req, "security_group", render_group(row))


def create_group(req: Req) -> webob.Response:
    bodies, bulk = req.items("security_group", "security_groups")
    items = []
    for body in bodies:
        data = attrs.parse(body, "security_group", attrs.SECURITY_GROUP, creating=True,
                           is_admin=req.is_admin,
                       caller=req.project_id)
        data.setdefault("project_id", req.project_id)
        items.append(data)
    with db.write(req.deps.engine) as conn:
        rows = [store.create_group(conn, **data) for data in items]
        rows = list(tags.attach(conn, rows))
    return created(req, "security_group", "security_groups",
                   [render_group(r) for r in rows], bulk)


def update_group(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "security_group", attrs.SECURITY_GROUP, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        row = store.update_group(conn, req.arg("id"), data, req.expect_revision())
        row = tags.attach(conn, [row])[0]
    return shown(req, "security_group", render_group(row))


def delete_group(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        store.delete_group(conn, req.arg("id"), is_admin=req.is_admin)
    return empty_response(204)


# ---- rules -----------------------------------------------------------------------------


def list_rules(req: Req) -> webob.Response:
    filters = req.filters((*store.RULE_COLUMNS, "normalized_cidr", "belongs_to_default_sg"))
    _ensure_default(req, filters)
    with db.read(req.deps.engine) as conn:
        rows = store.list_rules(conn, filters, req.scope)
    rest = {k: v for k, v in filters.items() if k not in store.RULE_COLUMNS}
    return listing(req, "security_group_rules", [render_rule(r) for r in rows], rest)


def _visible_rule(req: Req, conn: Connection, rule_id: str) -> dict[str, Any]:
    rule = store.get_rule(conn, rule_id)
    if req.scope is not None and rule["project_id"] != req.scope:
        try:
            store.visible_group(conn, rule["security_group_id"], req.scope)
        except errors.NotFound:
            raise store.rule_not_found(rule_id) from None
    return rule


def show_rule(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _visible_rule(req, conn, req.arg("id"))
    return shown(req, "security_group_rule", render_rule(row))


def parse_rule(req: Req, body: Any) -> tuple[str, str, str, rules.Rule]:
    data = attrs.parse(body, "security_group_rule", attrs.SECURITY_GROUP_RULE, creating=True,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    for required in ("security_group_id", "direction"):
        if required not in data:
            raise errors.BadRequest(f"Failed to parse request. Required attribute '{required}' "
                                    "not specified", "HTTPBadRequest")
    rule = rules.check(rules.Rule(
        direction=data["direction"], ethertype=rules.ethertype(data.get("ethertype", "IPv4")),
        protocol=rules.protocol(data.get("protocol")),
        port_range_min=rules.port(data.get("port_range_min")),
        port_range_max=rules.port(data.get("port_range_max")),
        remote_ip_prefix=rules.prefix(data.get("remote_ip_prefix")),
        remote_group_id=data.get("remote_group_id"),
        remote_address_group_id=data.get("remote_address_group_id")))
    return (data["security_group_id"], data.get("project_id", req.project_id),
            data.get("description", ""), rule)


def create_rule(req: Req) -> webob.Response:
    bodies, bulk = req.items("security_group_rule", "security_group_rules")
    items = [parse_rule(req, body) for body in bodies]
    with db.write(req.deps.engine) as conn:
        for group_id, _, _, _ in items:
            store.visible_group(conn, group_id, req.scope)
        rows = store.create_rules(conn, items, req.scope)
    return created(req, "security_group_rule", "security_group_rules",
                   [render_rule(r) for r in rows], bulk)


def delete_rule(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        rule = _visible_rule(req, conn, req.arg("id"))
        if req.scope is not None and rule["project_id"] != req.scope:
            group = store.get_group(conn, rule["security_group_id"])
            if group["project_id"] != req.scope:
                raise errors.Forbidden("(rule:delete_security_group_rule) is disallowed by "
                                       "policy")
        store.delete_rule(conn, req.arg("id"))
    return empty_response(204)
