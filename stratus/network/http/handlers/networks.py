"""/v2.0/networks."""

from __future__ import annotations

from typing import Any

import webob
from sqlalchemy.engine import Connection

from stratus.network import errors, qos_allocations
from stratus.network.http import attrs, render
from stratus.network.http.wsgi import Req, created, empty_response, listing, shown
from stratus.network.store import access, quotas, tags
from stratus.network.store import address_scopes as scope_store
from stratus.network.store import networks as store
from stratus.network.store import ports as port_store
from stratus.network.store import qos as qos_store
from stratus.network.store import security_groups as sg_store
from stratus.storage import engine as db
from stratus.undo import Undo

NETWORK_FILTERS = (*store.NETWORK_COLUMNS, "status", "subnets", "availability_zones")


def visible(req: Req, conn: Connection, network_id: str) -> dict[str, Any]:
    """The network if the caller may see it (its own, shared with it, external), else 404."""
    row = store.get_network(conn, network_id)
    if not access.can(conn, "network", network_id, req.scope):
        raise errors.not_found("network", network_id)
    return row


def owned(req: Req, conn: Connection, network_id: str, rule: str = "update_network"
          ) -> dict[str, Any]:
    """The network if the caller may change it (owner or admin); 403 for one it only sees."""
    row = visible(req, conn, network_id)
    if req.scope is not None and row["project_id"] != req.scope:
        raise errors.Forbidden(f"(rule:{rule}) is disallowed by policy")
    return row


def _rows(req: Req, conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with their tags, address scopes and, for a project, whether one is shared with
    it alone."""
    tags.attach(conn, rows)
    scopes = scope_store.of_networks(conn, [r["id"] for r in rows])
    for row in rows:
        row["scopes"] = scopes.get(row["id"], {})
    if req.scope is not None:
        granted = access.grants_to(conn, "network", [r["id"] for r in rows], req.scope)
        for row in rows:
            row["granted"] = row["id"] in granted
    return rows


def list_networks(req: Req) -> webob.Response:
    filters = req.filters(NETWORK_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = _rows(req, conn, store.list_networks(conn, filters, req.scope))
    columns = set(store.NETWORK_COLUMNS)
    rest = {k: v for k, v in filters.items() if k not in columns}
    return listing(req, "networks", [render.network(req, r) for r in rows], rest)


def show_network(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _rows(req, conn, [visible(req, conn, req.arg("id"))])[0]
    return shown(req, "network", render.network(req, row))


def check_policy(req: Req, conn: Connection, policy_id: str | None) -> None:
    port_store.check_policy(conn, policy_id, req.scope)


def create_network(req: Req) -> webob.Response:
    bodies, bulk = req.items("network", "networks")
    items = []
    for body in bodies:
        data = attrs.parse(body, "network", attrs.NETWORK, creating=True, is_admin=req.is_admin,
                       caller=req.project_id)
        data.pop("availability_zone_hints", None)
        data.setdefault("project_id", req.project_id)
        items.append(data)
    with db.write(req.deps.engine) as conn:
        rows = []
        for data in items:
            if "qos_policy_id" not in data:
                data["qos_policy_id"] = qos_store.default_for(conn, data["project_id"])
            check_policy(req, conn, data.get("qos_policy_id"))
            sg_store.ensure_default(conn, data["project_id"])
            rows.append(store.create_network(conn, **data))
            quotas.check(conn, data["project_id"], "network")
        rows = _rows(req, conn, rows)
    return created(req, "network", "networks", [render.network(req, r) for r in rows], bulk)


def update_network(req: Req) -> webob.Response:
    """A new QoS policy moves the allocations of the bound ports that inherit it (all of
    them or, when one NIC lacks room, none: the undo stack gives back what was moved)."""
    data = attrs.parse(req.body(), "network", attrs.NETWORK, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    undo = Undo()
    try:
        with db.write(req.deps.engine) as conn:
            network = owned(req, conn, req.arg("id"))
            if "qos_policy_id" in data and data["qos_policy_id"] != network["qos_policy_id"]:
                port_store.check_policy_change(conn, network["qos_policy_id"], req.scope)
                check_policy(req, conn, data["qos_policy_id"])
            inheriting = port_store.list_ports(conn, {"network_id": [req.arg("id")]}, None)
            inheriting = [p for p in inheriting if p["qos_policy_id"] is None]
            row = store.update_network(conn, req.arg("id"), data, req.expect_revision())
            if "qos_policy_id" in data:
                for before in inheriting:
                    after = port_store.get_port(conn, before["id"])
                    change = qos_allocations.plan(before, before["rules"], after["rules"])
                    if change is not None:
                        qos_allocations.apply(req.deps.placement, change, undo)
                        port_store.set_allocation(conn, before["id"], change.allocation)
            row = _rows(req, conn, [row])[0]
    except BaseException:
        undo.rollback()
        raise
    return shown(req, "network", render.network(req, row))


def delete_network(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        owned(req, conn, req.arg("id"), "delete_network")
        store.delete_network(conn, req.arg("id"))
    return empty_response(204)
