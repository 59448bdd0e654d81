"""Address scopes: a namespace subnet pools of one IP version may belong to. A scope some
pool belongs to cannot be deleted (``AddressScopeInUse``)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store import access, rbac
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

COLUMNS = {"id": "id", "name": "name", "description": "description",
           "project_id": "project_id", "tenant_id": "project_id", "ip_version": "ip_version",
           "shared": "shared", "revision_number": "revision_number"}


def not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"Address scope {ident} could not be found.",
                           "AddressScopeNotFound")


def get(conn: Connection, scope_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.address_scopes).where(s.address_scopes.c.id == scope_id)
                       ).first()
    if row is None:
        raise not_found(scope_id)
    return dict(row._mapping)


def visible(conn: Connection, scope_id: str, project_id: str | None) -> dict[str, Any]:
    scope = get(conn, scope_id)
    if not access.can(conn, "address_scope", scope_id, project_id):
        raise not_found(scope_id)
    return scope


def list_all(conn: Connection, filters: Filters, project_id: str | None
             ) -> list[dict[str, Any]]:
    t = s.address_scopes
    query = where(sa.select(t), t, filters, COLUMNS)
    if project_id is not None:
        query = query.where(access.visible("address_scope", project_id))
    return [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))]


def create(conn: Connection, *, project_id: str, ip_version: int, name: str = "",
           description: str = "", shared: bool = False) -> dict[str, Any]:
    scope_id = new_id()
    conn.execute(sa.insert(s.address_scopes).values(
        id=scope_id, project_id=project_id, name=name, description=description,
        ip_version=ip_version, shared=shared, created_at=utcnow()))
    if shared:
        rbac.set_wildcard(conn, "address_scope", scope_id, access.SHARED, True, project_id)
    return get(conn, scope_id)


def update(conn: Connection, scope_id: str, values: dict[str, Any],
           expect_revision: int | None = None) -> dict[str, Any]:
    scope = get(conn, scope_id)
    if "shared" in values and values["shared"] != scope["shared"]:
        if not values["shared"]:
            raise errors.BadRequest("Unable to convert a shared address scope to a non-shared "
                                    "one.", "AddressScopeUpdateError")
        rbac.set_wildcard(conn, "address_scope", scope_id, access.SHARED, True,
                          scope["project_id"])
    bump(conn, s.address_scopes, scope_id, values, expect_revision)
    return get(conn, scope_id)


def delete(conn: Connection, scope_id: str) -> None:
    get(conn, scope_id)
    used = conn.execute(sa.select(s.subnet_pools.c.id).where(
        s.subnet_pools.c.address_scope_id == scope_id).limit(1)).scalar()
    if used is not None:
        raise errors.Conflict(f"Unable to complete operation on address scope {scope_id}. "
                              f"There are one or more subnet pools in use on the address "
                              "scope.", "AddressScopeInUse")
    rbac.delete_for(conn, "address_scope", scope_id)
    conn.execute(sa.delete(s.address_scopes).where(s.address_scopes.c.id == scope_id))
    forget_tags(conn, [scope_id])


def of_networks(conn: Connection, network_ids: list[str]) -> dict[str, dict[int, str]]:
    """Each network's address scope per IP version (from its subnets' pools)."""
    out: dict[str, dict[int, str]] = {n: {} for n in network_ids}
    if network_ids:
        sn, sp = s.subnets, s.subnet_pools
        for row in conn.execute(
                sa.select(sn.c.network_id, sp.c.ip_version, sp.c.address_scope_id)
                .join(sp, sp.c.id == sn.c.subnetpool_id)
                .where(sn.c.network_id.in_(network_ids), sp.c.address_scope_id.is_not(None))):
            out[row.network_id][row.ip_version] = row.address_scope_id
    return out
