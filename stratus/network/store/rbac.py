"""RBAC policies (``/v2.0/rbac-policies``): grants of a network, a QoS policy or a security
group to one project or to every project (``*``).

A grant cannot be withdrawn while the project it names uses what it granted: ports
of that project on a shared network, its routers' gateways and floating IPs on an
external one, its ports and networks naming a shared QoS policy (Neutron's
``RbacPolicyInUse``, 409). Withdrawing the ``*`` grant checks every project that no
other grant still covers. The owner's ``shared``/``router:external`` flags write and
remove the ``*`` grant through :func:`set_wildcard`, under the same checks.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store.access import EXTERNAL, OBJECT_TYPES, SHARED, WILDCARD
from stratus.network.store.common import Filters, bump, new_id, utcnow, where

COLUMNS = {"id": "id", "project_id": "project_id", "tenant_id": "project_id",
           "object_type": "object_type", "object_id": "object_id",
           "target_tenant": "target_project", "action": "action"}


def not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"RBAC policy of type {ident} could not be found.",
                           "RbacPolicyNotFound")


def get(conn: Connection, policy_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.rbac_policies).where(s.rbac_policies.c.id == policy_id)
                       ).first()
    if row is None:
        raise errors.NotFound(f"RBAC policy {policy_id} could not be found.",
                              "RbacPolicyNotFound")
    return dict(row._mapping)


def list_all(conn: Connection, filters: Filters, project_id: str | None
             ) -> list[dict[str, Any]]:
    """Policies matching ``filters``; a ``project_id`` caller sees those it made (not those
    naming it: who shares what with whom is the sharer's business, as in Neutron)."""
    r = s.rbac_policies
    query = where(sa.select(r), r, filters, COLUMNS)
    if project_id is not None:
        query = query.where(r.c.project_id == project_id)
    return [dict(row._mapping) for row in conn.execute(query.order_by(r.c.id))]


def object_of(conn: Connection, object_type: str, object_id: str) -> dict[str, Any] | None:
    table, _ = OBJECT_TYPES[object_type]
    row = conn.execute(sa.select(table).where(table.c.id == object_id)).first()
    return dict(row._mapping) if row else None


def check_action(object_type: str, action: str) -> None:
    if object_type not in OBJECT_TYPES:
        raise errors.BadRequest(f"Invalid input for object_type. Reason: {object_type} is not "
                                f"in {sorted(OBJECT_TYPES)}.", "HTTPBadRequest")
    if action not in OBJECT_TYPES[object_type][1]:
        raise errors.BadRequest(f"Action '{action}' for object type '{object_type}' is not "
                                "supported.", "InvalidActionForType")


def create(conn: Connection, *, project_id: str, object_type: str, object_id: str,
           target_project: str, action: str) -> dict[str, Any]:
    check_action(object_type, action)
    entry_id = new_id()
    exists = conn.execute(sa.select(s.rbac_policies.c.id).where(
        s.rbac_policies.c.object_type == object_type,
        s.rbac_policies.c.object_id == object_id, s.rbac_policies.c.action == action,
        s.rbac_policies.c.target_project == target_project)).first()
    if exists is not None:
        raise errors.Conflict(f"RBAC policy on object {object_id} for target {target_project} "
                              f"with action {action} already exists.", "DuplicateRbacPolicy")
    conn.execute(sa.insert(s.rbac_policies).values(
        id=entry_id, project_id=project_id, object_type=object_type, object_id=object_id,
        target_project=target_project, action=action, created_at=utcnow()))
    if target_project == WILDCARD:
        _mirror(conn, object_type, object_id, action, True)
    _sync_external(conn, object_type, object_id, action)
    _touch(conn, object_type, object_id)
    return get(conn, entry_id)


def update(conn: Connection, policy_id: str, target_project: str) -> dict[str, Any]:
    entry = get(conn, policy_id)
    if target_project != entry["target_project"]:
        _keep_default_external(conn, entry)
        check_unused(conn, entry, losing=entry["target_project"], gaining=target_project)
        bump(conn, s.rbac_policies, policy_id, {"target_project": target_project})
        if WILDCARD in (target_project, entry["target_project"]):
            _mirror(conn, entry["object_type"], entry["object_id"], entry["action"],
                    target_project == WILDCARD)
        _touch(conn, entry["object_type"], entry["object_id"])
    return get(conn, policy_id)


def delete(conn: Connection, policy_id: str) -> None:
    entry = get(conn, policy_id)
    _keep_default_external(conn, entry)
    check_unused(conn, entry, losing=entry["target_project"])
    conn.execute(sa.delete(s.rbac_policies).where(s.rbac_policies.c.id == policy_id))
    if entry["target_project"] == WILDCARD:
        _mirror(conn, entry["object_type"], entry["object_id"], entry["action"], False)
    _sync_external(conn, entry["object_type"], entry["object_id"], entry["action"])
    _touch(conn, entry["object_type"], entry["object_id"])


def _touch(conn: Connection, object_type: str, object_id: str) -> None:
    """A grant's change is a change of what it grants: the object's revision advances
    (Neutron's standard-attr-revisions)."""
    table, _ = OBJECT_TYPES[object_type]
    if "revision_number" in table.c:
        conn.execute(sa.update(table).where(table.c.id == object_id).values(
            updated_at=utcnow(), revision_number=table.c.revision_number + 1))


def withdraw_external(conn: Connection, network_id: str) -> None:
    """A network made internal (``router:external: false``) loses every
    ``access_as_external`` grant, each checked as its own withdrawal (Neutron deletes
    them all with the flag)."""
    r = s.rbac_policies
    rows = conn.execute(sa.select(r).where(
        r.c.object_type == "network", r.c.object_id == network_id,
        r.c.action == EXTERNAL).order_by(r.c.target_project != WILDCARD)).all()
    for row in rows:
        entry = dict(row._mapping)
        check_unused(conn, entry, losing=entry["target_project"])
        conn.execute(sa.delete(r).where(r.c.id == entry["id"]))


def delete_for(conn: Connection, object_type: str, object_id: str) -> None:
    """Every grant of an object being deleted."""
    r = s.rbac_policies
    conn.execute(sa.delete(r).where(r.c.object_type == object_type, r.c.object_id == object_id))


def set_wildcard(conn: Connection, object_type: str, object_id: str, action: str, on: bool,
                 owner: str) -> None:
    """The owner's flag (``shared``, ``router:external``) as the ``*`` grant."""
    r = s.rbac_policies
    entry = conn.execute(sa.select(r).where(
        r.c.object_type == object_type, r.c.object_id == object_id, r.c.action == action,
        r.c.target_project == WILDCARD)).first()
    if on and entry is None:
        conn.execute(sa.insert(r).values(
            id=new_id(), project_id=owner, object_type=object_type, object_id=object_id,
            target_project=WILDCARD, action=action, created_at=utcnow()))
    elif not on and entry is not None:
        check_unused(conn, dict(entry._mapping), losing=WILDCARD)
        conn.execute(sa.delete(r).where(r.c.id == entry.id))


def _mirror(conn: Connection, object_type: str, object_id: str, action: str, on: bool) -> None:
    """The ``*`` grant of ``access_as_shared`` as the object's ``shared`` column."""
    table, _ = OBJECT_TYPES[object_type]
    if action == SHARED and "shared" in table.c:
        conn.execute(sa.update(table).where(table.c.id == object_id).values(shared=on))


def _sync_external(conn: Connection, object_type: str, object_id: str, action: str) -> None:
    """A network is external while any ``access_as_external`` grant names it (Neutron
    converts a network on the first such grant, to one project or to all, and back once
    the last one goes)."""
    if object_type != "network" or action != EXTERNAL:
        return
    r, n = s.rbac_policies, s.networks
    left = conn.execute(sa.select(r.c.id).where(
        r.c.object_type == "network", r.c.object_id == object_id,
        r.c.action == EXTERNAL).limit(1)).first() is not None
    conn.execute(sa.update(n).where(n.c.id == object_id, n.c.external != left)
                 .values(external=left))


def _keep_default_external(conn: Connection, entry: dict[str, Any]) -> None:
    """The default external network stays shared to every project (RbacPolicyInUse)."""
    if (entry["object_type"], entry["action"], entry["target_project"]) != (
            "network", EXTERNAL, WILDCARD):
        return
    n = s.networks
    if conn.execute(sa.select(n.c.id).where(n.c.id == entry["object_id"],
                                            n.c.is_default)).first() is not None:
        raise errors.Conflict(f"RBAC policy on object {entry['object_id']} cannot be "
                              "removed because other objects depend on it: Default external "
                              "networks must be shared to everyone.", "RbacPolicyInUse")


# ---- what a grant's withdrawal would break -------------------------------------------


def _still_covered(conn: Connection, entry: dict[str, Any]) -> sa.Select:
    """Projects that keep access once ``entry`` goes (another grant names them)."""
    r = s.rbac_policies
    return sa.select(r.c.target_project).where(
        r.c.object_type == entry["object_type"], r.c.object_id == entry["object_id"],
        r.c.action == entry["action"], r.c.id != entry.get("id", ""))


def check_unused(conn: Connection, entry: dict[str, Any], losing: str,
                 gaining: str | None = None) -> None:
    """RbacPolicyInUse when a project losing access (``losing``: one, or ``*``: all not
    otherwise covered) still uses the object through this grant.

    Networks follow Neutron's network sharing check (the owner's own use never counts);
    the other objects Neutron's RBAC objects' (``_validate_rbac_policy_delete``): a
    project's grant may go unless that project uses the object and no ``*`` grant stays;
    the ``*`` grant may go only if every project using it, the owner included, keeps
    a grant of its own. ``gaining``: the project a network's grant is being changed to,
    which keeps its access through it (Neutron's network checks count it; its other
    objects' do not)."""
    obj = object_of(conn, entry["object_type"], entry["object_id"])
    if obj is None:
        return
    owner = obj["project_id"]
    other = _still_covered(conn, entry)
    targets = set(conn.execute(other).scalars())
    if entry["object_type"] != "network":
        gaining = None   # Neutron's RBAC objects check a change as the old grant's removal
    if gaining is not None:
        targets.add(gaining)
    if entry["object_type"] == "network":
        if "*" in targets:
            return

        def losers(column: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
            clause = sa.and_(column != owner, column.not_in(other),
                             column != (gaining or ""))
            return clause if losing == WILDCARD else sa.and_(clause, column == losing)

        user = _network_user(conn, entry, losers)
        if user is not None:
            _in_use(entry, user)
        return
    bound = _bound_projects(conn, entry)
    if losing != WILDCARD:
        if losing == owner or WILDCARD in targets or losing not in bound:
            return
        _in_use(entry, f"project {losing}")
    missing = sorted(bound - targets)
    if missing:
        _in_use(entry, f"project {missing[0]}")


def _in_use(entry: dict[str, Any], user: str) -> None:
    raise errors.Conflict(f"RBAC policy on object {entry['object_id']} cannot be removed "
                          f"because other objects depend on it: {user}.", "RbacPolicyInUse")


def _network_user(conn: Connection, entry: dict[str, Any], losers: Any) -> str | None:
    object_id, action = entry["object_id"], entry["action"]
    p = s.ports
    if action == SHARED:
        return _first(conn, sa.select(p.c.id).where(
            p.c.network_id == object_id, losers(p.c.project_id),
            sa.not_(p.c.device_owner.like("network:%"))), "port")
    rt, fip = s.routers, s.floating_ips
    found = _first(conn, sa.select(rt.c.id).join(p, p.c.id == rt.c.gw_port_id).where(
        p.c.network_id == object_id, losers(rt.c.project_id)), "router")
    return found or _first(conn, sa.select(fip.c.id).where(
        fip.c.floating_network_id == object_id, losers(fip.c.project_id)), "floating IP")


def _bound_projects(conn: Connection, entry: dict[str, Any]) -> set[str]:
    """The projects whose resources use the object (Neutron's get_bound_project_ids)."""
    object_type, object_id = entry["object_type"], entry["object_id"]
    queries: list[sa.Select] = []
    if object_type == "qos_policy":
        queries = [sa.select(s.ports.c.project_id).where(s.ports.c.qos_policy_id == object_id),
                   sa.select(s.networks.c.project_id).where(
                       s.networks.c.qos_policy_id == object_id)]
    elif object_type == "security_group":
        psg = s.port_security_groups
        queries = [sa.select(s.ports.c.project_id).join(psg, psg.c.port_id == s.ports.c.id)
                   .where(psg.c.security_group_id == object_id)]
    elif object_type == "subnetpool":
        queries = [sa.select(s.subnets.c.project_id).where(
            s.subnets.c.subnetpool_id == object_id)]
    elif object_type == "address_scope":
        queries = [sa.select(s.subnet_pools.c.project_id).where(
            s.subnet_pools.c.address_scope_id == object_id)]
    return {p for q in queries for p in conn.execute(q.distinct()).scalars()}


def _first(conn: Connection, query: sa.Select, kind: str) -> str | None:
    found = conn.execute(query.limit(1)).scalar()
    return f"{kind} {found}" if found is not None else None
