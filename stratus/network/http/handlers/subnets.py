"""/v2.0/subnets."""

from __future__ import annotations

from typing import Any

import webob
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network.http import attrs, render
from stratus.network.http.handlers.networks import owned as owned_network
from stratus.network.http.wsgi import Req, created, empty_response, listing, shown
from stratus.network.store import access, quotas, tags
from stratus.network.store import subnet_pools as pool_store
from stratus.network.store import subnets as store
from stratus.storage import engine as db

SUBNET_FILTERS = (*store.COLUMNS, "segment_id", "service_types", "dns_publish_fixed_ip",
                  *store.NETWORK_FLAGS)


def visible(req: Req, conn: Connection, subnet_id: str) -> dict[str, Any]:
    row = store.get_subnet(conn, subnet_id)
    if req.scope is not None and row["project_id"] != req.scope and not access.can(
            conn, "network", row["network_id"], req.scope):
        raise errors.not_found("subnet", subnet_id)
    return row


def owned(req: Req, conn: Connection, subnet_id: str, action: str) -> dict[str, Any]:
    row = visible(req, conn, subnet_id)
    if req.scope is not None and row["project_id"] != req.scope:
        raise errors.Forbidden(f"(rule:{action}_subnet) is disallowed by policy")
    return row


def list_subnets(req: Req) -> webob.Response:
    filters = req.filters(SUBNET_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, store.list_subnets(conn, filters, req.scope))
    rest = {k: v for k, v in filters.items()
            if k not in store.COLUMNS and k not in store.NETWORK_FLAGS}
    return listing(req, "subnets", [render.subnet(req, r) for r in rows], rest)


def show_subnet(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [visible(req, conn, req.arg("id"))])[0]
    return shown(req, "subnet", render.subnet(req, row))


def _parsed(req: Req, body: Any) -> dict[str, Any]:
    raw = body.get("subnet") if isinstance(body, dict) else None
    data = attrs.parse(body, "subnet", attrs.SUBNET, creating=True, is_admin=req.is_admin,
                       caller=req.project_id)
    for required in ("network_id", "ip_version"):
        if required not in data:
            raise errors.BadRequest(f"Failed to parse request. Required attribute '{required}' "
                                    "not specified", "HTTPBadRequest")
    # A gateway_ip left out gets the first address; one given as null means none.
    data["gateway_omitted"] = not (isinstance(raw, dict) and "gateway_ip" in raw)
    for dropped in ("segment_id", "service_types", "dns_publish_fixed_ip"):
        data.pop(dropped, None)
    data.setdefault("project_id", req.project_id)
    return data


def create_subnet(req: Req) -> webob.Response:
    bodies, bulk = req.items("subnet", "subnets")
    items = [_parsed(req, body) for body in bodies]
    with db.write(req.deps.engine) as conn:
        rows = []
        for data in items:
            owned_network(req, conn, data["network_id"], "create_subnet")
            pool_store.place_subnet(conn, data, req.scope)
            rows.append(store.create_subnet(conn, **data))
            quotas.check(conn, data["project_id"], "subnet")
        rows = list(tags.attach(conn, rows))
    return created(req, "subnet", "subnets", [render.subnet(req, r) for r in rows], bulk)


def update_subnet(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "subnet", attrs.SUBNET, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    for dropped in ("service_types", "dns_publish_fixed_ip"):
        data.pop(dropped, None)
    with db.write(req.deps.engine) as conn:
        owned(req, conn, req.arg("id"), "update")
        row = store.update_subnet(conn, req.arg("id"), data, req.expect_revision())
        row = tags.attach(conn, [row])[0]
    return shown(req, "subnet", render.subnet(req, row))


def delete_subnet(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        owned(req, conn, req.arg("id"), "delete")
        store.delete_subnet(conn, req.arg("id"))
    return empty_response(204)
