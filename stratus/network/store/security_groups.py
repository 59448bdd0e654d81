"""Security groups, their rules, and which ports are in which groups.

Each project has a group named ``default``, made the first time the project lists
groups or rules or makes a port, network or group (as Neutron does): it lets the
group's members reach each other and everything go out. A port that names no group
joins it, unless the port's security is off or it is the network's own (router,
DHCP, floating IP). ``default`` is the one name no other group may take; the default
group cannot be renamed, and only an admin may delete it.

A rule is checked by :mod:`stratus.network.secgroup_rules` and stored with its key:
the same rule twice in one group is 409 ``SecurityGroupRuleExists``, also when two
requests race (the key is unique). Groups and rules count against the project's
quotas; a group some port is in cannot be deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network import secgroup_rules as rules
from stratus.network.store import access, quotas, rbac
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

DEFAULT = "default"
DEFAULT_DESCRIPTION = "Default security group"
GROUP_COLUMNS = {"id": "id", "name": "name", "description": "description",
                 "project_id": "project_id", "tenant_id": "project_id",
                 "stateful": "stateful", "revision_number": "revision_number"}
RULE_COLUMNS = {"id": "id", "security_group_id": "security_group_id",
                "project_id": "project_id", "tenant_id": "project_id",
                "description": "description", "direction": "direction",
                "ethertype": "ethertype", "protocol": "protocol",
                "port_range_min": "port_range_min", "port_range_max": "port_range_max",
                "remote_ip_prefix": "remote_ip_prefix", "remote_group_id": "remote_group_id",
                "remote_address_group_id": "remote_address_group_id",
                "revision_number": "revision_number"}
# The rules a new group starts with: everything out; the default group also lets its
# members in (remote_group_id = the group itself, "SELF").
EGRESS = [("egress", "IPv4", None), ("egress", "IPv6", None)]
SELF = "SELF"
DEFAULT_RULES = [*EGRESS, ("ingress", "IPv4", SELF), ("ingress", "IPv6", SELF)]


def group_not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"Security group {ident} does not exist", "SecurityGroupNotFound")


def rule_not_found(ident: str) -> errors.NotFound:
    return errors.NotFound(f"Security group rule {ident} does not exist",
                           "SecurityGroupRuleNotFound")


# ---- groups ------------------------------------------------------------------------------


def _defaults(conn: Connection, ids: Sequence[str]) -> set[str]:
    d = s.default_security_groups
    return set(conn.execute(sa.select(d.c.security_group_id).where(
        d.c.security_group_id.in_(list(ids)))).scalars()) if ids else set()


def _groups(conn: Connection, query: sa.Select) -> list[dict[str, Any]]:
    rows = [dict(r._mapping) for r in conn.execute(query.order_by(s.security_groups.c.id))]
    ids = [r["id"] for r in rows]
    by_group: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    if ids:
        t = s.security_group_rules
        for found in conn.execute(sa.select(t).where(t.c.security_group_id.in_(ids))
                                  .order_by(t.c.created_at, t.c.id)):
            by_group[found.security_group_id].append(dict(found._mapping))
    defaults = _defaults(conn, ids)
    for row in rows:
        row["rules"] = by_group[row["id"]]
        row["is_default"] = row["id"] in defaults
        for rule in row["rules"]:
            rule["belongs_to_default_sg"] = row["is_default"]
    return rows


def get_group(conn: Connection, group_id: str) -> dict[str, Any]:
    found = _groups(conn, sa.select(s.security_groups).where(
        s.security_groups.c.id == group_id))
    if not found:
        raise group_not_found(group_id)
    return found[0]


def visible_group(conn: Connection, group_id: str, project_id: str | None
                  ) -> dict[str, Any]:
    """The group if ``project_id`` (None: an admin) may see it, else 404."""
    if not access.can(conn, "security_group", group_id, project_id):
        raise group_not_found(group_id)
    return get_group(conn, group_id)


def list_groups(conn: Connection, filters: Filters, project_id: str | None
                ) -> list[dict[str, Any]]:
    t = s.security_groups
    query = where(sa.select(t), t, filters, GROUP_COLUMNS)
    if project_id is not None:
        query = query.where(access.visible("security_group", project_id))
    return _groups(conn, query)


def default_group(conn: Connection, project_id: str) -> str | None:
    d = s.default_security_groups
    found = conn.execute(sa.select(d.c.security_group_id).where(
        d.c.project_id == project_id)).scalar()
    return str(found) if found is not None else None


def ensure_default(conn: Connection, project_id: str) -> str:
    """The project's default group, made now if it has none. Two first uses at once
    collide on the project's row; the app runs the loser again, which then finds it."""
    found = default_group(conn, project_id)
    if found is not None:
        return found
    group_id = _insert_group(conn, project_id, DEFAULT, DEFAULT_DESCRIPTION, True)
    conn.execute(sa.insert(s.default_security_groups).values(
        project_id=project_id, security_group_id=group_id))
    _template_rules(conn, group_id, project_id, DEFAULT_RULES)
    return group_id


def _insert_group(conn: Connection, project_id: str, name: str, description: str,
                  stateful: bool) -> str:
    group_id = new_id()
    conn.execute(sa.insert(s.security_groups).values(
        id=group_id, project_id=project_id, name=name, description=description,
        stateful=stateful, created_at=utcnow()))
    return group_id


def _template_rules(conn: Connection, group_id: str, project_id: str,
                    template: Iterable[tuple[str, str, str | None]]) -> None:
    for direction, ethertype, remote in template:
        _insert_rule(conn, group_id, project_id, "", rules.Rule(
            direction, ethertype, None, None, None, None,
            group_id if remote == SELF else None, None))


def create_group(conn: Connection, *, project_id: str, name: str = "",
                 description: str = "", stateful: bool = True) -> dict[str, Any]:
    if name.lower() == DEFAULT:
        raise errors.Conflict("Default security group already exists.",
                              "SecurityGroupDefaultAlreadyExists")
    ensure_default(conn, project_id)
    group_id = _insert_group(conn, project_id, name, description, stateful)
    _template_rules(conn, group_id, project_id, EGRESS)
    quotas.check(conn, project_id, "security_group", "security_group_rule")
    return get_group(conn, group_id)


def _members(conn: Connection, group_id: str) -> str | None:
    psg = s.port_security_groups
    found = conn.execute(sa.select(psg.c.port_id).where(
        psg.c.security_group_id == group_id).limit(1)).scalar()
    return str(found) if found is not None else None


def update_group(conn: Connection, group_id: str, values: dict[str, Any],
                 expect_revision: int | None = None) -> dict[str, Any]:
    group = get_group(conn, group_id)
    if "name" in values and values["name"] != group["name"]:
        if group["is_default"]:
            raise errors.Conflict("Updating default security group not allowed.",
                                  "SecurityGroupCannotUpdateDefault")
        if str(values["name"]).lower() == DEFAULT:
            raise errors.Conflict("Default security group already exists.",
                                  "SecurityGroupDefaultAlreadyExists")
    if "stateful" in values and values["stateful"] != group["stateful"] and \
            _members(conn, group_id):
        raise errors.Conflict(f"Security Group {group_id} in use.", "SecurityGroupInUse")
    bump(conn, s.security_groups, group_id, values, expect_revision)
    return get_group(conn, group_id)


def delete_group(conn: Connection, group_id: str, *, is_admin: bool) -> None:
    group = get_group(conn, group_id)
    if _members(conn, group_id):
        raise errors.Conflict(f"Security Group {group_id} in use.", "SecurityGroupInUse")
    if group["is_default"] and not is_admin:
        raise errors.Conflict("Insufficient rights for removing default security group.",
                              "SecurityGroupCannotRemoveDefault")
    t = s.security_group_rules
    conn.execute(sa.delete(t).where(sa.or_(t.c.security_group_id == group_id,
                                           t.c.remote_group_id == group_id)))
    conn.execute(sa.delete(s.default_security_groups).where(
        s.default_security_groups.c.security_group_id == group_id))
    rbac.delete_for(conn, "security_group", group_id)
    conn.execute(sa.delete(s.security_groups).where(s.security_groups.c.id == group_id))
    forget_tags(conn, [group_id])


# ---- rules -------------------------------------------------------------------------------


def _insert_rule(conn: Connection, group_id: str, project_id: str, description: str,
                 rule: rules.Rule) -> str:
    rule_id = new_id()
    conn.execute(sa.insert(s.security_group_rules).values(
        id=rule_id, security_group_id=group_id, project_id=project_id,
        description=description, direction=rule.direction, ethertype=rule.ethertype,
        protocol=rule.protocol, port_range_min=rule.port_range_min,
        port_range_max=rule.port_range_max, remote_ip_prefix=rule.remote_ip_prefix,
        remote_group_id=rule.remote_group_id,
        remote_address_group_id=rule.remote_address_group_id,
        rule_key=rules.key(group_id, rule), created_at=utcnow()))
    return rule_id


def get_rule(conn: Connection, rule_id: str) -> dict[str, Any]:
    t = s.security_group_rules
    row = conn.execute(sa.select(t).where(t.c.id == rule_id)).first()
    if row is None:
        raise rule_not_found(rule_id)
    out = dict(row._mapping)
    out["belongs_to_default_sg"] = bool(_defaults(conn, [out["security_group_id"]]))
    return out


def list_rules(conn: Connection, filters: Filters, project_id: str | None
               ) -> list[dict[str, Any]]:
    """Rules matching ``filters``; a ``project_id`` caller sees its own and the rules of
    the groups it may see."""
    t = s.security_group_rules
    query = where(sa.select(t), t, filters, RULE_COLUMNS)
    if project_id is not None:
        seen = sa.select(s.security_groups.c.id).where(
            access.visible("security_group", project_id))
        query = query.where(sa.or_(t.c.project_id == project_id,
                                   t.c.security_group_id.in_(seen)))
    rows = [dict(r._mapping) for r in conn.execute(query.order_by(t.c.created_at, t.c.id))]
    defaults = _defaults(conn, sorted({r["security_group_id"] for r in rows}))
    for row in rows:
        row["belongs_to_default_sg"] = row["security_group_id"] in defaults
    return rows


def create_rules(conn: Connection, items: Sequence[tuple[str, str, str, rules.Rule]],
                 caller_project: str | None) -> list[dict[str, Any]]:
    """Rules (group id, project, description, rule), all in one group, all or none."""
    groups = {group_id for group_id, _, _, _ in items}
    if len(groups) > 1:
        raise errors.BadRequest("Only allowed to update rules for one security profile at "
                                "a time", "SecurityGroupNotSingleGroupRules")
    seen: set[str] = set()
    made = []
    for group_id, project_id, description, rule in items:
        visible_group(conn, group_id, caller_project)
        if rule.remote_group_id is not None and not access.can(
                conn, "security_group", rule.remote_group_id,
                None if caller_project is None else project_id):
            raise group_not_found(rule.remote_group_id)
        rule_key = rules.key(group_id, rule)
        if rule_key in seen:
            raise errors.BadRequest("Duplicate Security Group Rule in POST.",
                                    "DuplicateSecurityGroupRuleInPost")
        seen.add(rule_key)
        t = s.security_group_rules
        existing = conn.execute(sa.select(t.c.id).where(t.c.rule_key == rule_key)).scalar()
        if existing is not None:
            raise errors.Conflict(f"Security group rule already exists. Rule id is "
                                  f"{existing}.", "SecurityGroupRuleExists")
        made.append(_insert_rule(conn, group_id, project_id, description, rule))
        bump(conn, s.security_groups, group_id, {})
    for project in {p for _, p, _, _ in items}:
        quotas.check(conn, project, "security_group_rule")
    return [get_rule(conn, rule_id) for rule_id in made]


def delete_rule(conn: Connection, rule_id: str) -> None:
    rule = get_rule(conn, rule_id)
    conn.execute(sa.delete(s.security_group_rules).where(s.security_group_rules.c.id == rule_id))
    bump(conn, s.security_groups, rule["security_group_id"], {})


# ---- ports' groups -----------------------------------------------------------------------


def groups_of(conn: Connection, port_ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {p: [] for p in port_ids}
    if port_ids:
        psg = s.port_security_groups
        for row in conn.execute(sa.select(psg).where(psg.c.port_id.in_(list(port_ids)))
                                .order_by(psg.c.security_group_id)):
            out[row.port_id].append(row.security_group_id)
    return out


def set_port_groups(conn: Connection, port_id: str, group_ids: Sequence[str],
                    project_id: str, is_admin: bool) -> None:
    """Put the port in exactly ``group_ids``; each must be the port's project's (or shared
    with it), unless an admin asks; stateful and stateless groups do not mix."""
    wanted = sorted(set(group_ids))
    t = s.security_groups
    found = {row.id: row for row in conn.execute(sa.select(t).where(t.c.id.in_(wanted)))}
    usable = set(found) if is_admin else {
        g for g in found if access.can(conn, "security_group", g, project_id)}
    missing = [g for g in wanted if g not in usable]
    if missing:
        raise group_not_found(", ".join(missing))
    if len({found[g].stateful for g in wanted}) > 1:
        raise errors.Conflict("Error Cannot apply both stateful and stateless security groups "
                              "on the same port at the same time while attempting the "
                              "operation.", "SecurityGroupConflict")
    psg = s.port_security_groups
    conn.execute(sa.delete(psg).where(psg.c.port_id == port_id))
    if wanted:
        conn.execute(sa.insert(psg), [{"port_id": port_id, "security_group_id": g}
                                      for g in wanted])
