"""/v2.0/routers (with add_router_interface / remove_router_interface) and
/v2.0/floatingips.

Neutron's default policy: a project manages its own routers and floating IPs; only an
admin picks a gateway's SNAT mode or fixed IPs, or a floating IP's address."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http import attrs
from stratus.network.http.attrs import boolean, fixed_ips, uuid_value
from stratus.network.http.wsgi import (
    Req,
    created,
    empty_response,
    json_response,
    listing,
    shown,
    timestamp,
)
from stratus.network.store import floating_ips as fip_store
from stratus.network.store import routers as store
from stratus.network.store import tags
from stratus.storage import engine as db


def render_router(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "project_id": row["project_id"], "tenant_id": row["project_id"],
            "admin_state_up": row["admin_state_up"], "status": row["status"],
            "external_gateway_info": row["gateway"],
            "routes": [{"destination": d, "nexthop": h} for d, h in row["routes"]],
            "tags": list(row.get("tags", ())), "revision_number": row["revision_number"],
            "created_at": timestamp(row["created_at"]),
            "updated_at": timestamp(row["updated_at"] or row["created_at"])}


def render_fip(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "project_id": row["project_id"], "tenant_id": row["project_id"],
            "description": row["description"],
            "floating_network_id": row["floating_network_id"],
            "floating_ip_address": row["floating_ip_address"],
            "port_id": row["fixed_port_id"], "fixed_ip_address": row["fixed_ip_address"],
            "router_id": row["router_id"], "status": row["status"],
            "tags": list(row.get("tags", ())), "revision_number": row["revision_number"],
            "created_at": timestamp(row["created_at"]),
            "updated_at": timestamp(row["updated_at"] or row["created_at"])}


def _gateway(req: Req, value: Any) -> dict[str, Any] | None:
    """``external_gateway_info`` checked: {} or null clears the gateway."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or set(value) - {"network_id", "enable_snat",
                                                   "external_fixed_ips"}:
        raise errors.BadRequest(f"Invalid input for external_gateway_info. Reason: "
                                f"'{value}' is not a valid gateway.", "HTTPBadRequest")
    if "network_id" not in value:
        raise errors.BadRequest("Invalid input for external_gateway_info. Reason: Validation "
                                "of dictionary's keys failed. Expected keys: "
                                "{'network_id'}.", "HTTPBadRequest")
    out: dict[str, Any] = {"network_id": uuid_value()("network_id", value["network_id"])}
    if "enable_snat" in value:
        out["enable_snat"] = boolean("enable_snat", value["enable_snat"])
    if "external_fixed_ips" in value:
        out["external_fixed_ips"] = fixed_ips("external_fixed_ips",
                                              value["external_fixed_ips"])
    for admin_only in ("enable_snat", "external_fixed_ips"):
        if admin_only in out and not req.is_admin:
            raise errors.Forbidden(f"(rule:update_router:external_gateway_info:{admin_only}) "
                                   "is disallowed by policy")
    return out


def _owned(req: Req, conn: Any, router_id: str) -> dict[str, Any]:
    return store.visible(conn, router_id, req.scope)


def list_routers(req: Req) -> webob.Response:
    filters = req.filters((*store.COLUMNS, "external_gateway_info", "routes"))
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, store.list_all(conn, filters, req.scope))
    rest = {k: v for k, v in filters.items() if k not in store.COLUMNS}
    return listing(req, "routers", [render_router(r) for r in rows], rest)


def show_router(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [_owned(req, conn, req.arg("id"))])[0]
    return shown(req, "router", render_router(row))


def create_router(req: Req) -> webob.Response:
    bodies, bulk = req.items("router", "routers")
    items = []
    for body in bodies:
        data = attrs.parse(body, "router", attrs.ROUTER, creating=True, is_admin=req.is_admin,
                       caller=req.project_id)
        for dropped in ("distributed", "ha", "availability_zone_hints"):
            data.pop(dropped, None)
        data["gateway"] = _gateway(req, data.pop("external_gateway_info", None))
        data.setdefault("project_id", req.project_id)
        items.append(data)
    with db.write(req.deps.engine) as conn:
        rows = [store.create(conn, caller_project=req.scope, **data) for data in items]
        rows = list(tags.attach(conn, rows))
    return created(req, "router", "routers", [render_router(r) for r in rows], bulk)


def update_router(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "router", attrs.ROUTER, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    for dropped in ("distributed", "ha"):
        data.pop(dropped, None)
    gateway_given = "external_gateway_info" in data
    gateway = _gateway(req, data.pop("external_gateway_info", None))
    routes_given = "routes" in data
    routes = data.pop("routes", None)
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        row = store.update(conn, req.arg("id"), data, gateway=gateway,
                           gateway_given=gateway_given, routes=routes,
                           routes_given=routes_given, caller_project=req.scope,
                           expect_revision=req.expect_revision())
        row = tags.attach(conn, [row])[0]
    return shown(req, "router", render_router(row))


def delete_router(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        store.delete(conn, req.arg("id"))
    return empty_response(204)


def _interface_args(req: Req) -> tuple[str | None, str | None]:
    body = req.body()
    if not isinstance(body, dict) or set(body) - {"subnet_id", "port_id"}:
        raise errors.BadRequest("Bad router request: Either subnet_id or port_id must be "
                                "specified.", "BadRequest")
    subnet, port = body.get("subnet_id"), body.get("port_id")
    return (uuid_value(nullable=True)("subnet_id", subnet),
            uuid_value(nullable=True)("port_id", port))


def add_interface(req: Req) -> webob.Response:
    subnet_id, port_id = _interface_args(req)
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        body = store.add_interface(conn, req.arg("id"), subnet_id=subnet_id, port_id=port_id,
                                   caller_project=req.scope)
    return json_response(body)


def remove_interface(req: Req) -> webob.Response:
    subnet_id, port_id = _interface_args(req)
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        body = store.remove_interface(conn, req.arg("id"), subnet_id=subnet_id,
                                      port_id=port_id, caller_project=req.scope)
    return json_response(body)


# ---- floating IPs ----------------------------------------------------------------------


def list_fips(req: Req) -> webob.Response:
    filters = req.filters(tuple(fip_store.COLUMNS))
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, fip_store.list_all(conn, filters, req.scope))
    return listing(req, "floatingips", [render_fip(r) for r in rows], {})


def show_fip(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [fip_store.visible(conn, req.arg("id"), req.scope)])[0]
    return shown(req, "floatingip", render_fip(row))


def create_fip(req: Req) -> webob.Response:
    bodies, bulk = req.items("floatingip", "floatingips")
    items = []
    for body in bodies:
        data = attrs.parse(body, "floatingip", attrs.FLOATING_IP, creating=True,
                           is_admin=req.is_admin,
                       caller=req.project_id)
        if "floating_network_id" not in data:
            raise errors.BadRequest("Failed to parse request. Required attribute "
                                    "'floating_network_id' not specified", "HTTPBadRequest")
        data.setdefault("project_id", req.project_id)
        items.append(data)
    with db.write(req.deps.engine) as conn:
        rows = [fip_store.create(conn, caller_project=req.scope, **data) for data in items]
        rows = list(tags.attach(conn, rows))
    return created(req, "floatingip", "floatingips", [render_fip(r) for r in rows], bulk)


def update_fip(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "floatingip", attrs.FLOATING_IP, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    if not data:
        # A blank update clears the association (Neutron keeps that from the time a
        # floating IP had no other attribute).
        data = {"port_id": None}
    with db.write(req.deps.engine) as conn:
        fip_store.visible(conn, req.arg("id"), req.scope)
        row = fip_store.update(conn, req.arg("id"), data, caller_project=req.scope,
                               expect_revision=req.expect_revision())
        row = tags.attach(conn, [row])[0]
    return shown(req, "floatingip", render_fip(row))


def delete_fip(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        fip_store.visible(conn, req.arg("id"), req.scope)
        fip_store.delete(conn, req.arg("id"))
    return empty_response(204)
