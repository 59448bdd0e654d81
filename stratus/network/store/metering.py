"""Metering labels and their rules (the metering extension, admins only): which traffic of
a project's routers is counted. Simulated hosts carry no traffic, so nothing is counted;
the labels and rules are records with Neutron's checks (a rule names a prefix, not
remote_ip_prefix together with a source or destination one; rules of one label, direction
and exclusion may not overlap: 409 ``MeteringLabelRuleOverlaps``)."""

from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store.common import Filters, forget_tags, new_id, utcnow, where

LABEL_COLUMNS = {"id": "id", "name": "name", "description": "description",
                 "project_id": "project_id", "tenant_id": "project_id", "shared": "shared"}
RULE_COLUMNS = {"id": "id", "metering_label_id": "metering_label_id",
                "direction": "direction", "excluded": "excluded",
                "remote_ip_prefix": "remote_ip_prefix", "source_ip_prefix": "source_ip_prefix",
                "destination_ip_prefix": "destination_ip_prefix"}
PREFIXES = ("remote_ip_prefix", "source_ip_prefix", "destination_ip_prefix")


def get_label(conn: Connection, label_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.metering_labels).where(s.metering_labels.c.id == label_id)
                       ).first()
    if row is None:
        raise errors.NotFound(f"Metering label '{label_id}' does not exist.",
                              "MeteringLabelNotFound")
    return dict(row._mapping)


def list_labels(conn: Connection, filters: Filters) -> list[dict[str, Any]]:
    t = s.metering_labels
    query = where(sa.select(t), t, filters, LABEL_COLUMNS)
    return [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))]


def create_label(conn: Connection, *, project_id: str, name: str = "",
                 description: str = "", shared: bool = False) -> dict[str, Any]:
    label_id = new_id()
    conn.execute(sa.insert(s.metering_labels).values(
        id=label_id, project_id=project_id, name=name, description=description,
        shared=shared, created_at=utcnow()))
    return get_label(conn, label_id)


def delete_label(conn: Connection, label_id: str) -> None:
    get_label(conn, label_id)
    conn.execute(sa.delete(s.metering_label_rules).where(
        s.metering_label_rules.c.metering_label_id == label_id))
    conn.execute(sa.delete(s.metering_labels).where(s.metering_labels.c.id == label_id))
    forget_tags(conn, [label_id])


def get_rule(conn: Connection, rule_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.metering_label_rules).where(
        s.metering_label_rules.c.id == rule_id)).first()
    if row is None:
        raise errors.NotFound(f"Metering label rule '{rule_id}' does not exist.",
                              "MeteringLabelRuleNotFound")
    return dict(row._mapping)


def list_rules(conn: Connection, filters: Filters) -> list[dict[str, Any]]:
    t = s.metering_label_rules
    query = where(sa.select(t), t, filters, RULE_COLUMNS)
    return [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))]


def _prefix(field: str, value: Any) -> str | None:
    if value in (None, ""):
        return None
    try:
        return str(ipaddress.ip_network(str(value), strict=False))
    except ValueError:
        raise errors.BadRequest(f"{field}: {value} is invalid.", "Invalid") from None


def create_rule(conn: Connection, *, metering_label_id: str, direction: str = "ingress",
                excluded: bool = False, **given: Any) -> dict[str, Any]:
    get_label(conn, metering_label_id)
    prefixes = {field: _prefix(field, given.get(field)) for field in PREFIXES}
    if prefixes["remote_ip_prefix"] and (prefixes["source_ip_prefix"]
                                         or prefixes["destination_ip_prefix"]):
        raise errors.BadRequest("Cannot use 'remote-ip-prefix' in conjunction with "
                                "'source-ip-prefix' or 'destination-ip-prefix'.", "Invalid")
    if not any(prefixes.values()):
        raise errors.BadRequest("You must define at least one of the following parameters "
                                "'remote_ip_prefix', or 'source_ip_prefix' or "
                                "'destination_ip_prefix'.", "Invalid")
    remote = prefixes["remote_ip_prefix"]
    if remote:
        new = ipaddress.ip_network(remote)
        for other in list_rules(conn, {"metering_label_id": [metering_label_id],
                                       "direction": [direction],
                                       "excluded": ["true" if excluded else "false"]}):
            old = other["remote_ip_prefix"]
            if old and ipaddress.ip_network(old).version == new.version and \
                    ipaddress.ip_network(old).overlaps(new):
                raise errors.Conflict(f"Metering label rule with remote_ip_prefix '{remote}' "
                                      "overlaps another.", "MeteringLabelRuleOverlaps")
    rule_id = new_id()
    conn.execute(sa.insert(s.metering_label_rules).values(
        id=rule_id, metering_label_id=metering_label_id, direction=direction,
        excluded=excluded, created_at=utcnow(), **prefixes))
    return get_rule(conn, rule_id)


def delete_rule(conn: Connection, rule_id: str) -> None:
    get_rule(conn, rule_id)
    conn.execute(sa.delete(s.metering_label_rules).where(
        s.metering_label_rules.c.id == rule_id))
