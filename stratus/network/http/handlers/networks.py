"""/v2.0/networks and /v2.0/subnets."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http import attrs, render
from stratus.network.http.wsgi import Req, empty_response, json_response, listing
from stratus.network.store import networks as store
from stratus.network.store import qos as qos_store
from stratus.storage import engine as db

NETWORK_FILTERS = (*store.NETWORK_COLUMNS, "status", "subnets", "availability_zones")
SUBNET_FILTERS = (*store.SUBNET_COLUMNS,)


def _visible(req: Req, row: dict[str, Any], kind: str) -> dict[str, Any]:
    """``row`` if the caller may see it (admin, owner, or a shared network), else 404."""
    if req.scope is not None and row["project_id"] != req.scope and not row.get("shared"):
        raise errors.not_found(kind, row["id"])
    return row


def _owner(req: Req, row: dict[str, Any], kind: str) -> None:
    """Only the owner (or an admin) changes or deletes; others may not even learn of it
    unless it is shared (then 403)."""
    if req.scope is not None and row["project_id"] != req.scope:
        if row.get("shared"):
            raise errors.Forbidden(f"(rule:update_{kind}) is disallowed by policy")
        raise errors.not_found(kind, row["id"])


def _check_policy(req: Req, conn: Any, policy_id: str | None) -> None:
    if policy_id is None:
        return
    policy = qos_store.get_policy(conn, policy_id)
    if req.scope is not None and policy["project_id"] != req.scope and not policy["shared"]:
        raise errors.not_found("policy", policy_id)


def list_networks(req: Req) -> webob.Response:
    filters = req.filters(NETWORK_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = store.list_networks(conn, filters, req.scope)
    columns = set(store.NETWORK_COLUMNS)
    rest = {k: v for k, v in filters.items() if k not in columns}
    return listing(req, "networks", [render.network(req, r) for r in rows], rest)


def show_network(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _visible(req, store.get_network(conn, req.arg("id")), "network")
    return json_response({"network": render.network(req, row)})


def create_network(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "network", attrs.NETWORK, creating=True,
                       is_admin=req.is_admin)
    data.pop("availability_zone_hints", None)
    data.setdefault("project_id", req.project_id)
    with db.write(req.deps.engine) as conn:
        _check_policy(req, conn, data.get("qos_policy_id"))
        row = store.create_network(conn, **data)
    return json_response({"network": render.network(req, row)}, status=201)


def update_network(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "network", attrs.NETWORK, creating=False,
                       is_admin=req.is_admin)
    with db.write(req.deps.engine) as conn:
        _owner(req, store.get_network(conn, req.arg("id")), "network")
        if "qos_policy_id" in data:
            _check_policy(req, conn, data["qos_policy_id"])
        row = store.update_network(conn, req.arg("id"), data, req.expect_revision())
    return json_response({"network": render.network(req, row)})


def delete_network(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owner(req, store.get_network(conn, req.arg("id")), "network")
        store.delete_network(conn, req.arg("id"))
    return empty_response(204)


# ---- subnets -------------------------------------------------------------------------


def list_subnets(req: Req) -> webob.Response:
    filters = req.filters(SUBNET_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = store.list_subnets(conn, filters, req.scope)
    return listing(req, "subnets", [render.subnet(req, r) for r in rows], {})


def _subnet(req: Req, conn: Any) -> dict[str, Any]:
    row = store.get_subnet(conn, req.arg("id"))
    network = store.get_network(conn, row["network_id"])
    if req.scope is not None and row["project_id"] != req.scope and not network["shared"]:
        raise errors.not_found("subnet", row["id"])
    return row


def show_subnet(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _subnet(req, conn)
    return json_response({"subnet": render.subnet(req, row)})


def create_subnet(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "subnet", attrs.SUBNET, creating=True, is_admin=req.is_admin)
    for required in ("network_id", "ip_version"):
        if required not in data:
            raise errors.BadRequest(f"Failed to parse request. Required attribute '{required}' "
                                    "not specified", "HTTPBadRequest")
    if "cidr" not in data:
        raise errors.BadRequest("Bad subnets request: a cidr must be specified in the "
                                "absence of a subnet pool.", "BadRequest")
    data.setdefault("project_id", req.project_id)
    with db.write(req.deps.engine) as conn:
        _owner(req, store.get_network(conn, data["network_id"]), "network")
        row = store.create_subnet(conn, **data)
    return json_response({"subnet": render.subnet(req, row)}, status=201)


def update_subnet(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "subnet", attrs.SUBNET, creating=False,
                       is_admin=req.is_admin)
    with db.write(req.deps.engine) as conn:
        _owner(req, _subnet(req, conn), "subnet")
        row = store.update_subnet(conn, req.arg("id"), data, req.expect_revision())
    return json_response({"subnet": render.subnet(req, row)})


def delete_subnet(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owner(req, _subnet(req, conn), "subnet")
        store.delete_subnet(conn, req.arg("id"))
    return empty_response(204)
