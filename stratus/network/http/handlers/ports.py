"""/v2.0/ports, and their bindings (the port-bindings extension, admin and service only).

A port's QoS policy (or its network's, which it inherits) changing under a bound port
changes its server's allocation in Placement in the same request
(:mod:`stratus.network.qos_allocations`); if anything fails afterwards the allocation
change is undone, so a refused update changes nothing anywhere.
"""

from __future__ import annotations

from typing import Any

import webob
from sqlalchemy.engine import Connection

from stratus.network import errors, qos_allocations
from stratus.network.http import attrs, render
from stratus.network.http.wsgi import Req, created, empty_response, json_response, listing, shown
from stratus.network.store import bindings, tags
from stratus.network.store import networks as net_store
from stratus.network.store import ports as store
from stratus.storage import engine as db
from stratus.undo import Undo

PORT_FILTERS = (*store.PORT_COLUMNS, "binding:host_id", "fixed_ips", "security_groups",
                "ip_allocation", "binding:profile", "allowed_address_pairs")
BINDING_FILTERS = ("host", "vif_type", "vnic_type", "status")
# Attributes only an admin or the network's owner may set (Neutron's default policy).
NETWORK_OWNER_ONLY = ("mac_address", "port_security_enabled", "allowed_address_pairs")


def _port(req: Req, conn: Connection) -> dict[str, Any]:
    return store.visible_port(conn, req.arg("id"), req.scope)


def _owner_checks(req: Req, conn: Connection, network_id: str, data: dict[str, Any],
                  action: str) -> None:
    """What only an admin or the network's owner may ask for: a MAC, port security,
    allowed address pairs, fixed addresses by value, a network device owner."""
    if req.scope is None:
        return
    network = net_store.get_network(conn, network_id)
    if network["project_id"] == req.scope:
        return
    asked = [k for k in NETWORK_OWNER_ONLY if k in data]
    if any("ip_address" in item for item in data.get("fixed_ips") or ()):
        asked.append("fixed_ips:ip_address")
    if str(data.get("device_owner", "")).startswith("network:"):
        asked.append("device_owner")
    if asked:
        raise errors.Forbidden(f"(rule:{action}_port:{asked[0]}) is disallowed by policy")


def list_ports(req: Req) -> webob.Response:
    filters = req.filters(PORT_FILTERS)
    if "binding:host_id" in filters and not req.is_admin:
        raise errors.BadRequest("[binding:host_id] is invalid attribute for filtering",
                                "HTTPBadRequest")
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, store.list_ports(conn, filters, req.scope))
    known = {*store.PORT_COLUMNS, "binding:host_id", "fixed_ips", "security_groups"}
    rest = {k: v for k, v in filters.items() if k not in known}
    return listing(req, "ports", [render.port(req, r) for r in rows], rest)


def show_port(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [_port(req, conn)])[0]
    return shown(req, "port", render.port(req, row))


def _parsed(req: Req, body: Any) -> dict[str, Any]:
    data = attrs.parse(body, "port", attrs.PORT, creating=True, is_admin=req.is_admin,
                       caller=req.project_id)
    if "network_id" not in data:
        raise errors.BadRequest("Failed to parse request. Required attribute 'network_id' not "
                                "specified", "HTTPBadRequest")
    data.setdefault("project_id", req.project_id)
    data["host"] = data.get("host") or ""
    raw = body["port"]
    if "security_groups" not in raw:
        data.pop("security_groups", None)
    return data


def create_port(req: Req) -> webob.Response:
    bodies, bulk = req.items("port", "ports")
    items = [_parsed(req, body) for body in bodies]
    with db.write(req.deps.engine) as conn:
        rows = []
        for data in items:
            _owner_checks(req, conn, data["network_id"], data, "create")
            rows.append(store.create_port(conn, caller_project=req.scope, **data))
        rows = list(tags.attach(conn, rows))
    return created(req, "port", "ports", [render.port(req, r) for r in rows], bulk)


def update_port(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "port", attrs.PORT, creating=False, is_admin=req.is_admin,
                       caller=req.project_id)
    host_given = "host" in data
    host = data.pop("host", None)
    if host_given and host is None:
        host = ""   # binding:host_id null: unbind
    profile = data.pop("profile", None)
    undo = Undo()
    try:
        with db.write(req.deps.engine) as conn:
            before = _port(req, conn)
            _owner_checks(req, conn, before["network_id"], data, "update")
            row = store.update_port(conn, req.arg("id"), data, host=host, profile=profile,
                                    caller_project=req.scope,
                                    expect_revision=req.expect_revision())
            if "qos_policy_id" in data and profile is None:
                change = qos_allocations.plan(before, before["rules"], row["rules"])
                if change is not None:
                    qos_allocations.apply(req.deps.placement, change, undo)
                    store.set_allocation(conn, row["id"], change.allocation)
                    row = store.get_port(conn, row["id"])
            row = tags.attach(conn, [row])[0]
    except BaseException:
        undo.rollback()
        raise
    return shown(req, "port", render.port(req, row))


def delete_port(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        port = _port(req, conn)
        if req.scope is not None and port["project_id"] != req.scope and \
                port["network_project_id"] != req.scope:
            raise errors.Forbidden("(rule:delete_port) is disallowed by policy")
        store.delete_port(conn, req.arg("id"))
    return empty_response(204)


# ---- bindings ------------------------------------------------------------------------


def _admin(req: Req, action: str) -> None:
    if not req.is_admin:
        raise errors.Forbidden(f"(rule:{action}_port_binding) is disallowed by policy")


def list_bindings(req: Req) -> webob.Response:
    _admin(req, "get")
    filters = req.filters(BINDING_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = bindings.list_bindings(conn, req.arg("id"))
    return listing(req, "bindings", [render.binding(r) for r in rows], filters)


def show_binding(req: Req) -> webob.Response:
    _admin(req, "get")
    with db.read(req.deps.engine) as conn:
        row = bindings.get_binding(conn, req.arg("id"), req.arg("host"))
    return shown(req, "binding", render.binding(row))


def create_binding(req: Req) -> webob.Response:
    _admin(req, "create")
    data = attrs.parse(req.body(), "binding", attrs.BINDING, creating=True, is_admin=True)
    if not data.get("host"):
        raise errors.BadRequest("Failed to parse request. Required attribute 'host' not "
                                "specified", "HTTPBadRequest")
    with db.write(req.deps.engine) as conn:
        row = bindings.create_binding(conn, req.arg("id"), data["host"],
                                      data.get("vnic_type"), data.get("profile"))
    return shown(req, "binding", render.binding(row), 201)


def update_binding(req: Req) -> webob.Response:
    _admin(req, "update")
    data = attrs.parse(req.body(), "binding", attrs.BINDING, creating=False, is_admin=True)
    with db.write(req.deps.engine) as conn:
        row = bindings.update_binding(conn, req.arg("id"), req.arg("host"),
                                      data.get("vnic_type"), data.get("profile"))
    return shown(req, "binding", render.binding(row))


def activate_binding(req: Req) -> webob.Response:
    _admin(req, "activate")
    with db.write(req.deps.engine) as conn:
        row = bindings.activate_binding(conn, req.arg("id"), req.arg("host"))
    # Unwrapped, as Neutron's controller answers (openstacksdk reads it that way).
    return json_response(render.binding(row))


def delete_binding(req: Req) -> webob.Response:
    _admin(req, "delete")
    with db.write(req.deps.engine) as conn:
        bindings.delete_binding(conn, req.arg("id"), req.arg("host"))
    return empty_response(204)
