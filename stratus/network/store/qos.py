"""QoS policies and their rules. A policy's minimum rules are what its ports ask Placement
for, so they cannot change under a port that is bound to a server (Neutron refuses too:
the server's allocation was made from them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.model import PLACEMENT_RULES, QosRule
from stratus.network.store import access, rbac
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

POLICY_COLUMNS = {"id": "id", "name": "name", "description": "description",
                  "project_id": "project_id", "tenant_id": "project_id", "shared": "shared",
                  "is_default": "is_default", "revision_number": "revision_number"}


def _rule(row: Any) -> QosRule:
    return QosRule(row.id, row.policy_id, row.type, row.direction, int(row.value),
                   int(row.burst))


def rules_of(conn: Connection, policy_ids: Iterable[str]) -> dict[str, list[QosRule]]:
    ids = sorted(set(policy_ids))
    out: dict[str, list[QosRule]] = {i: [] for i in ids}
    if not ids:
        return out
    rows = conn.execute(sa.select(s.qos_rules).where(s.qos_rules.c.policy_id.in_(ids))
                        .order_by(s.qos_rules.c.type, s.qos_rules.c.direction))
    for row in rows:
        out[row.policy_id].append(_rule(row))
    return out


def _policies(conn: Connection, query: sa.Select) -> list[dict[str, Any]]:
    rows = [dict(r._mapping) for r in conn.execute(query.order_by(s.qos_policies.c.id))]
    rules = rules_of(conn, (r["id"] for r in rows))
    for row in rows:
        row["rules"] = rules[row["id"]]
    return rows


def get_policy(conn: Connection, policy_id: str) -> dict[str, Any]:
    found = _policies(conn, sa.select(s.qos_policies).where(s.qos_policies.c.id == policy_id))
    if not found:
        raise errors.not_found("policy", policy_id)
    return found[0]


def list_policies(conn: Connection, filters: Filters, project_id: str | None
                  ) -> list[dict[str, Any]]:
    """Policies matching ``filters``; a ``project_id`` caller sees its own and those
    shared with it."""
    t = s.qos_policies
    query = where(sa.select(t), t, filters, POLICY_COLUMNS)
    if project_id is not None:
        query = query.where(access.visible("qos_policy", project_id))
    return _policies(conn, query)


def create_policy(conn: Connection, *, project_id: str, name: str = "", description: str = "",
                  shared: bool = False, is_default: bool = False) -> dict[str, Any]:
    policy_id = new_id()
    if is_default:
        _only_default(conn, project_id)
    conn.execute(sa.insert(s.qos_policies).values(
        id=policy_id, project_id=project_id, name=name, description=description,
        shared=shared, is_default=is_default, created_at=utcnow()))
    if shared:
        rbac.set_wildcard(conn, "qos_policy", policy_id, access.SHARED, True, project_id)
    return get_policy(conn, policy_id)


def default_for(conn: Connection, project_id: str) -> str | None:
    """The project's default policy (qos-default): a network made without one takes it."""
    t = s.qos_policies
    found = conn.execute(sa.select(t.c.id).where(t.c.project_id == project_id, t.c.is_default)
                         ).scalar()
    return str(found) if found is not None else None


def _only_default(conn: Connection, project_id: str, but: str | None = None) -> None:
    t = s.qos_policies
    query = sa.select(t.c.id).where(t.c.project_id == project_id, t.c.is_default)
    if but is not None:
        query = query.where(t.c.id != but)
    other = conn.execute(query).scalar()
    if other is not None:
        raise errors.Conflict(f"A default QoS policy exists for project {project_id}.",
                              "QoSPolicyDefaultAlreadyExists")


def update_policy(conn: Connection, policy_id: str, values: dict[str, Any],
                  expect_revision: int | None = None) -> dict[str, Any]:
    policy = get_policy(conn, policy_id)
    if values.get("is_default"):
        _only_default(conn, policy["project_id"], but=policy_id)
    if "shared" in values and values["shared"] != policy["shared"]:
        rbac.set_wildcard(conn, "qos_policy", policy_id, access.SHARED, values["shared"],
                          policy["project_id"])
    bump(conn, s.qos_policies, policy_id, values, expect_revision)
    return get_policy(conn, policy_id)


def users_of(conn: Connection, policy_id: str) -> tuple[list[str], list[str]]:
    """(networks, ports) that name the policy."""
    nets = list(conn.execute(sa.select(s.networks.c.id)
                             .where(s.networks.c.qos_policy_id == policy_id)).scalars())
    ports = list(conn.execute(sa.select(s.ports.c.id)
                              .where(s.ports.c.qos_policy_id == policy_id)).scalars())
    return nets, ports


def delete_policy(conn: Connection, policy_id: str) -> None:
    get_policy(conn, policy_id)
    nets, ports = users_of(conn, policy_id)
    if nets or ports:
        kind, ident = ("network", nets[0]) if nets else ("port", ports[0])
        raise errors.Conflict(f"QoS Policy {policy_id} is used by {kind} {ident}.",
                              "QosPolicyInUse")
    conn.execute(sa.delete(s.qos_rules).where(s.qos_rules.c.policy_id == policy_id))
    rbac.delete_for(conn, "qos_policy", policy_id)
    conn.execute(sa.delete(s.qos_policies).where(s.qos_policies.c.id == policy_id))
    forget_tags(conn, [policy_id])


# ---- rules ---------------------------------------------------------------------------


def _check_unbound(conn: Connection, policy_id: str, rule_type: str) -> None:
    """Minimum rules may not change while a server's port uses the policy: its allocation
    in Placement was made from them (Neutron answers 501; Stratus says 409, and why)."""
    if rule_type not in PLACEMENT_RULES:
        return
    p, n = s.ports, s.networks
    via_network = sa.select(n.c.id).where(n.c.qos_policy_id == policy_id)
    bound = conn.execute(sa.select(p.c.id).where(
        p.c.device_owner.like("compute:%"),
        sa.or_(p.c.qos_policy_id == policy_id,
               sa.and_(p.c.qos_policy_id.is_(None), p.c.network_id.in_(via_network))))
        .limit(1)).scalar()
    if bound is not None:
        raise errors.Conflict(
            f"Cannot change the {rule_type} rules of QoS policy {policy_id}: port {bound} of "
            "a server uses it, and the server's allocation in Placement was made from them. "
            "Detach the port (or delete the server) first, or use another policy.",
            "QosRuleInUse")


def create_rule(conn: Connection, policy_id: str, rule_type: str, direction: str,
                value: int, burst: int = 0) -> QosRule:
    policy = get_policy(conn, policy_id)
    _check_unbound(conn, policy_id, rule_type)
    for rule in policy["rules"]:
        if rule.type != rule_type:
            continue
        if rule.direction == direction:
            raise errors.Conflict(
                f"Rule {rule_type} conflicts with rule {rule.id} which already exists in QoS "
                f"Policy {policy_id}.", "QoSRulesConflict")
        if rule_type == "minimum_packet_rate" and "any" in (rule.direction, direction):
            raise errors.Conflict(
                f"A minimum_packet_rate rule with direction 'any' cannot be combined with a "
                f"directional one (rule {rule.id} of QoS Policy {policy_id}).",
                "QoSRuleParameterConflict")
    rule_id = new_id()
    conn.execute(sa.insert(s.qos_rules).values(id=rule_id, policy_id=policy_id,
                                               type=rule_type, direction=direction,
                                               value=value, burst=burst))
    bump(conn, s.qos_policies, policy_id, {})
    return get_rule(conn, policy_id, rule_type, rule_id)


def get_rule(conn: Connection, policy_id: str, rule_type: str, rule_id: str) -> QosRule:
    get_policy(conn, policy_id)
    t = s.qos_rules
    row = conn.execute(sa.select(t).where(t.c.id == rule_id, t.c.policy_id == policy_id,
                                          t.c.type == rule_type)).first()
    if row is None:
        raise errors.NotFound(f"QoS rule {rule_id} for policy {policy_id} could not be found.",
                              "QosRuleNotFound")
    return _rule(row)


def list_rules(conn: Connection, policy_id: str, rule_type: str) -> list[QosRule]:
    return [r for r in get_policy(conn, policy_id)["rules"] if r.type == rule_type]


def update_rule(conn: Connection, policy_id: str, rule_type: str, rule_id: str, *,
                direction: str | None = None, value: int | None = None,
                burst: int | None = None) -> QosRule:
    rule = get_rule(conn, policy_id, rule_type, rule_id)
    _check_unbound(conn, policy_id, rule_type)
    new_direction = rule.direction if direction is None else direction
    if new_direction != rule.direction:
        for other in list_rules(conn, policy_id, rule_type):
            if other.id != rule_id and (other.direction == new_direction or (
                    rule_type == "minimum_packet_rate" and "any" in (other.direction,
                                                                     new_direction))):
                raise errors.Conflict(
                    f"Rule {rule_type} conflicts with rule {other.id} which already exists in "
                    f"QoS Policy {policy_id}.", "QoSRulesConflict")
    conn.execute(sa.update(s.qos_rules).where(s.qos_rules.c.id == rule_id).values(
        direction=new_direction, value=rule.value if value is None else value,
        burst=rule.burst if burst is None else burst))
    bump(conn, s.qos_policies, policy_id, {})
    return get_rule(conn, policy_id, rule_type, rule_id)


def delete_rule(conn: Connection, policy_id: str, rule_type: str, rule_id: str) -> None:
    get_rule(conn, policy_id, rule_type, rule_id)
    _check_unbound(conn, policy_id, rule_type)
    conn.execute(sa.delete(s.qos_rules).where(s.qos_rules.c.id == rule_id))
    bump(conn, s.qos_policies, policy_id, {})
