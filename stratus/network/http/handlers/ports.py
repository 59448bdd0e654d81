"""/v2.0/ports, and their bindings (the port-bindings extension, admin and service only)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http import attrs, render
from stratus.network.http.wsgi import Req, empty_response, json_response, listing
from stratus.network.store import ports as store
from stratus.storage import engine as db

PORT_FILTERS = (*store.PORT_COLUMNS, "binding:host_id", "fixed_ips", "security_groups")
BINDING_FILTERS = ("host", "vif_type", "vnic_type", "status")


def _port(req: Req, conn: Any) -> dict[str, Any]:
    row = store.get_port(conn, req.arg("id"))
    if req.scope is not None and row["project_id"] != req.scope:
        raise errors.not_found("port", row["id"])
    return row


def list_ports(req: Req) -> webob.Response:
    filters = req.filters(PORT_FILTERS)
    if "binding:host_id" in filters and not req.is_admin:
        raise errors.BadRequest("[binding:host_id] is invalid attribute for filtering",
                                "HTTPBadRequest")
    with db.read(req.deps.engine) as conn:
        rows = store.list_ports(conn, filters, req.scope)
    rest = {k: v for k, v in filters.items()
            if k not in store.PORT_COLUMNS and k != "binding:host_id"}
    return listing(req, "ports", [render.port(req, r) for r in rows], rest)


def show_port(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _port(req, conn)
    return json_response({"port": render.port(req, row)})


def create_port(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "port", attrs.PORT, creating=True, is_admin=req.is_admin)
    if "network_id" not in data:
        raise errors.BadRequest("Failed to parse request. Required attribute 'network_id' not "
                                "specified", "HTTPBadRequest")
    data.setdefault("project_id", req.project_id)
    data["host"] = data.get("host") or ""
    with db.write(req.deps.engine) as conn:
        row = store.create_port(conn, caller_project=req.scope, **data)
    return json_response({"port": render.port(req, row)}, status=201)


def update_port(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "port", attrs.PORT, creating=False, is_admin=req.is_admin)
    host_given = "host" in data
    host = data.pop("host", None)
    if host_given and host is None:
        host = ""   # binding:host_id null: unbind
    profile = data.pop("profile", None)
    with db.write(req.deps.engine) as conn:
        _port(req, conn)
        row = store.update_port(conn, req.arg("id"), data, host=host, profile=profile,
                                caller_project=req.scope,
                                expect_revision=req.expect_revision())
    return json_response({"port": render.port(req, row)})


def delete_port(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _port(req, conn)
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
        rows = store.list_bindings(conn, req.arg("id"))
    return listing(req, "bindings", [render.binding(r) for r in rows], filters)


def show_binding(req: Req) -> webob.Response:
    _admin(req, "get")
    with db.read(req.deps.engine) as conn:
        row = store.get_binding(conn, req.arg("id"), req.arg("host"))
    return json_response({"binding": render.binding(row)})


def create_binding(req: Req) -> webob.Response:
    _admin(req, "create")
    data = attrs.parse(req.body(), "binding", attrs.BINDING, creating=True, is_admin=True)
    if not data.get("host"):
        raise errors.BadRequest("Failed to parse request. Required attribute 'host' not "
                                "specified", "HTTPBadRequest")
    with db.write(req.deps.engine) as conn:
        row = store.create_binding(conn, req.arg("id"), data["host"], data.get("vnic_type"),
                                   data.get("profile"))
    return json_response({"binding": render.binding(row)}, status=201)


def update_binding(req: Req) -> webob.Response:
    _admin(req, "update")
    data = attrs.parse(req.body(), "binding", attrs.BINDING, creating=False, is_admin=True)
    with db.write(req.deps.engine) as conn:
        row = store.update_binding(conn, req.arg("id"), req.arg("host"),
                                   data.get("vnic_type"), data.get("profile"))
    return json_response({"binding": render.binding(row)})


def activate_binding(req: Req) -> webob.Response:
    _admin(req, "activate")
    with db.write(req.deps.engine) as conn:
        row = store.activate_binding(conn, req.arg("id"), req.arg("host"))
    # Unwrapped, as Neutron's controller answers (openstacksdk reads it that way).
    return json_response(render.binding(row))


def delete_binding(req: Req) -> webob.Response:
    _admin(req, "delete")
    with db.write(req.deps.engine) as conn:
        store.delete_binding(conn, req.arg("id"), req.arg("host"))
    return empty_response(204)
