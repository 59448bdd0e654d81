"""Network quotas (``/v2.0/quotas``): per project limits on what it may own, Neutron's
defaults unless an admin set others; -1 is unlimited.

A create checks after it wrote (the new row counts) inside its transaction, so a
refused create leaves nothing behind (Nova's check-after-write). On PostgreSQL and
MariaDB two concurrent creates of one project may both see the count before the
other's commit and both pass at the limit, as Neutron without reservations can.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s

DEFAULTS = {"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
            "security_group": 10, "security_group_rule": 100, "rbac_policy": 10,
            "subnetpool": -1}
TABLES = {"network": s.networks, "subnet": s.subnets, "port": s.ports,
          "router": s.routers, "floatingip": s.floating_ips,
          "security_group": s.security_groups, "security_group_rule": s.security_group_rules,
          "rbac_policy": s.rbac_policies, "subnetpool": s.subnet_pools}


def limits(conn: Connection, project_id: str) -> dict[str, int]:
    out = dict(DEFAULTS)
    q = s.network_quotas
    for row in conn.execute(sa.select(q.c.resource, q.c.limit).where(
            q.c.project_id == project_id)):
        out[row.resource] = row.limit
    return out


def used(conn: Connection, project_id: str, resource: str) -> int:
    table = TABLES[resource]
    return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(
        table.c.project_id == project_id)).scalar_one())


def check(conn: Connection, project_id: str, *resources: str) -> None:
    """OverQuota (409) when the project now owns more of a resource than it may (call
    after the rows are written, inside the same transaction)."""
    limit = limits(conn, project_id)
    over = [r for r in resources if limit[r] >= 0 and used(conn, project_id, r) > limit[r]]
    if over:
        raise errors.Conflict(f"Quota exceeded for resources: {over}.", "OverQuota")


def projects(conn: Connection) -> list[str]:
    q = s.network_quotas
    return sorted(conn.execute(sa.select(q.c.project_id).distinct()).scalars())


def update(conn: Connection, project_id: str, values: dict[str, Any]) -> dict[str, int]:
    q = s.network_quotas
    for resource, limit in values.items():
        conn.execute(sa.delete(q).where(q.c.project_id == project_id, q.c.resource == resource))
        conn.execute(sa.insert(q).values(project_id=project_id, resource=resource,
                                         limit=limit))
    return limits(conn, project_id)


def reset(conn: Connection, project_id: str) -> None:
    conn.execute(sa.delete(s.network_quotas).where(s.network_quotas.c.project_id == project_id))


def details(conn: Connection, project_id: str) -> dict[str, dict[str, int]]:
    return {r: {"limit": limit, "used": used(conn, project_id, r), "reserved": 0}
            for r, limit in limits(conn, project_id).items()}
