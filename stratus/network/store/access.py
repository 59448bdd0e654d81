"""Who may see a network, a QoS policy or a security group: Neutron's ownership and RBAC
rules, as SQL clauses the stores add to their queries.

An object is visible to its project, to admins, and to every project an RBAC policy
grants it to: ``access_as_shared`` (use it: ports on a network, a policy on a port) or,
for networks, ``access_as_external`` (routers' gateways and floating IPs). A grant's
target is a project or ``*`` (every project); the owner's ``shared: true`` (and, for a
network, ``router:external: true``) is the ``*`` grant, mirrored in the ``shared``
column so that the common case needs no join. A network is external (``external``)
while any ``access_as_external`` grant names it, to every project or to one, as in
Neutron; only its grants make it visible.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import schema as s

SHARED, EXTERNAL = "access_as_shared", "access_as_external"
WILDCARD = "*"
# object_type -> (table, the actions a grant of it may name)
OBJECT_TYPES: dict[str, tuple[sa.Table, tuple[str, ...]]] = {
    "network": (s.networks, (SHARED, EXTERNAL)),
    "qos_policy": (s.qos_policies, (SHARED,)),
    "security_group": (s.security_groups, (SHARED,)),
    "address_scope": (s.address_scopes, (SHARED,)),
    "subnetpool": (s.subnet_pools, (SHARED,)),
}


def granted(object_type: str, project: str, actions: Iterable[str] = (SHARED,)) -> sa.Select:
    """Ids of the objects of ``object_type`` granted to ``project`` (or to everyone)."""
    r = s.rbac_policies
    return sa.select(r.c.object_id).where(
        r.c.object_type == object_type, r.c.action.in_(list(actions)),
        r.c.target_project.in_([project, WILDCARD]))


def network_visible(project: str) -> sa.ColumnElement[bool]:
    n = s.networks
    return sa.or_(n.c.project_id == project, n.c.shared,
                  n.c.id.in_(granted("network", project, (SHARED, EXTERNAL))))


def network_usable(project: str) -> sa.ColumnElement[bool]:
    """Networks ``project`` may put ports (and subnets' addresses) on: its own and those
    shared with it; an external one only gives routers and floating IPs."""
    n = s.networks
    return sa.or_(n.c.project_id == project, n.c.shared,
                  n.c.id.in_(granted("network", project, (SHARED,))))


def visible(object_type: str, project: str) -> sa.ColumnElement[bool]:
    table, _ = OBJECT_TYPES[object_type]
    if object_type == "network":
        return network_visible(project)
    clauses = [table.c.project_id == project, table.c.id.in_(granted(object_type, project))]
    if "shared" in table.c:
        clauses.append(table.c.shared)
    return sa.or_(*clauses)


def can(conn: Connection, object_type: str, object_id: str, project: str | None,
        clause: sa.ColumnElement[bool] | None = None) -> bool:
    """Whether ``project`` (None: an admin) sees the object (or meets ``clause``)."""
    if project is None:
        return True
    table, _ = OBJECT_TYPES[object_type]
    test = clause if clause is not None else visible(object_type, project)
    return conn.execute(sa.select(table.c.id).where(table.c.id == object_id, test)
                        ).first() is not None


def grants_to(conn: Connection, object_type: str, ids: Iterable[str], project: str
              ) -> set[str]:
    """Which of ``ids`` are shared with ``project`` by a grant naming it (not ``*``)."""
    wanted = sorted(set(ids))
    if not wanted:
        return set()
    r = s.rbac_policies
    return set(conn.execute(sa.select(r.c.object_id).where(
        r.c.object_type == object_type, r.c.action == SHARED, r.c.target_project == project,
        r.c.object_id.in_(wanted))).scalars())
