"""/v2.0/subnetpools (subnet_allocation) and /v2.0/address-scopes."""

from __future__ import annotations

from typing import Any

import webob
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network.http import attrs
from stratus.network.http.wsgi import Req, created, empty_response, listing, shown, timestamp
from stratus.network.store import address_scopes as scope_store
from stratus.network.store import subnet_pools as store
from stratus.network.store import tags
from stratus.storage import engine as db


def _common(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "project_id": row["project_id"], "tenant_id": row["project_id"],
            "ip_version": row["ip_version"], "shared": row["shared"],
            "tags": list(row.get("tags", ())), "revision_number": row["revision_number"],
            "created_at": timestamp(row["created_at"]),
            "updated_at": timestamp(row["updated_at"] or row["created_at"])}


def render_pool(row: dict[str, Any]) -> dict[str, Any]:
    out = _common(row)
    # Neutron answers the prefix lengths as strings (_make_subnetpool_dict).
    out.update({"prefixes": list(row["prefixes"]),
                "default_prefixlen": str(row["default_prefixlen"]),
                "min_prefixlen": str(row["min_prefixlen"]),
                "max_prefixlen": str(row["max_prefixlen"]),
                "is_default": row["is_default"], "default_quota": row["default_quota"],
                "address_scope_id": row["address_scope_id"]})
    return out


def _owned(req: Req, conn: Connection, row: dict[str, Any], kind: str) -> None:
    if req.scope is not None and row["project_id"] != req.scope:
        raise errors.Forbidden(f"(rule:update_{kind}) is disallowed by policy")


def list_pools(req: Req) -> webob.Response:
    filters = req.filters((*store.COLUMNS, "prefixes"))
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, store.list_all(conn, filters, req.scope))
    rest = {k: v for k, v in filters.items() if k not in store.COLUMNS}
    return listing(req, "subnetpools", [render_pool(r) for r in rows], rest)


def show_pool(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [store.visible(conn, req.arg("id"), req.scope)])[0]
    return shown(req, "subnetpool", render_pool(row))


def create_pool(req: Req) -> webob.Response:
    bodies, bulk = req.items("subnetpool", "subnetpools")
    items = []
    for body in bodies:
        data = attrs.parse(body, "subnetpool", attrs.SUBNET_POOL, creating=True,
                           is_admin=req.is_admin,
                       caller=req.project_id)
        if "prefixes" not in data:
            raise errors.BadRequest("Failed to parse request. Required attribute 'prefixes' "
                                    "not specified", "HTTPBadRequest")
        data.pop("ip_version", None)   # the prefixes' own
        data.setdefault("project_id", req.project_id)
        items.append(data)
    with db.write(req.deps.engine) as conn:
        rows = [store.create(conn, caller_project=req.scope, **data) for data in items]
        rows = list(tags.attach(conn, rows))
    return created(req, "subnetpool", "subnetpools", [render_pool(r) for r in rows], bulk)


def update_pool(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "subnetpool", attrs.SUBNET_POOL, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, store.visible(conn, req.arg("id"), req.scope), "subnetpool")
        row = store.update(conn, req.arg("id"), data, req.scope, req.expect_revision())
        row = tags.attach(conn, [row])[0]
    return shown(req, "subnetpool", render_pool(row))


def delete_pool(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, store.visible(conn, req.arg("id"), req.scope), "subnetpool")
        store.delete(conn, req.arg("id"))
    return empty_response(204)


# ---- address scopes -------------------------------------------------------------------


def list_scopes(req: Req) -> webob.Response:
    filters = req.filters(tuple(scope_store.COLUMNS))
    with db.read(req.deps.engine) as conn:
        rows = tags.attach(conn, scope_store.list_all(conn, filters, req.scope))
    return listing(req, "address_scopes", [_common(r) for r in rows], {})


def show_scope(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = tags.attach(conn, [scope_store.visible(conn, req.arg("id"), req.scope)])[0]
    return shown(req, "address_scope", _common(row))


def create_scope(req: Req) -> webob.Response:
    bodies, bulk = req.items("address_scope", "address_scopes")
    items = []
    for body in bodies:
        data = attrs.parse(body, "address_scope", attrs.ADDRESS_SCOPE, creating=True,
                           is_admin=req.is_admin,
                       caller=req.project_id)
        if "ip_version" not in data:
            raise errors.BadRequest("Failed to parse request. Required attribute 'ip_version' "
                                    "not specified", "HTTPBadRequest")
        data.setdefault("project_id", req.project_id)
        items.append(data)
    with db.write(req.deps.engine) as conn:
        rows = list(tags.attach(conn, [scope_store.create(conn, **d) for d in items]))
    return created(req, "address_scope", "address_scopes", [_common(r) for r in rows], bulk)


def update_scope(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "address_scope", attrs.ADDRESS_SCOPE, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, scope_store.visible(conn, req.arg("id"), req.scope),
               "address_scope")
        row = tags.attach(conn, [scope_store.update(conn, req.arg("id"), data,
                                                    req.expect_revision())])[0]
    return shown(req, "address_scope", _common(row))


def delete_scope(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, scope_store.visible(conn, req.arg("id"), req.scope),
               "address_scope")
        scope_store.delete(conn, req.arg("id"))
    return empty_response(204)
