"""/v2.0/metering/metering-labels and /v2.0/metering/metering-label-rules (admins only,
as Neutron's default policy: a project lists none and finds none)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http import attrs
from stratus.network.http.wsgi import Req, created, empty_response, listing, shown
from stratus.network.store import metering as store
from stratus.storage import engine as db


def render_label(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "project_id": row["project_id"], "tenant_id": row["project_id"],
            "shared": row["shared"]}


def render_rule(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "metering_label_id": row["metering_label_id"],
            "direction": row["direction"], "excluded": row["excluded"],
            "remote_ip_prefix": row["remote_ip_prefix"],
            "source_ip_prefix": row["source_ip_prefix"],
            "destination_ip_prefix": row["destination_ip_prefix"]}


def _admin(req: Req, rule: str) -> None:
    if not req.is_admin:
        raise errors.Forbidden(f"(rule:{rule}) is disallowed by policy")


def list_labels(req: Req) -> webob.Response:
    filters = req.filters(tuple(store.LABEL_COLUMNS))
    if not req.is_admin:
        return listing(req, "metering_labels", [], {})
    with db.read(req.deps.engine) as conn:
        rows = store.list_labels(conn, filters)
    return listing(req, "metering_labels", [render_label(r) for r in rows], {})


def show_label(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        if not req.is_admin:   # a project finds none
            raise errors.NotFound(f"Metering label '{req.arg('id')}' does not exist.",
                                  "MeteringLabelNotFound")
        row = store.get_label(conn, req.arg("id"))
    return shown(req, "metering_label", render_label(row))


def create_label(req: Req) -> webob.Response:
    bodies, bulk = req.items("metering_label", "metering_labels")
    items = [attrs.parse(b, "metering_label", attrs.METERING_LABEL, creating=True,
                         is_admin=req.is_admin,
                       caller=req.project_id) for b in bodies]
    _admin(req, "create_metering_label")
    with db.write(req.deps.engine) as conn:
        rows = [store.create_label(conn, **{"project_id": req.project_id, **data})
                for data in items]
    return created(req, "metering_label", "metering_labels",
                   [render_label(r) for r in rows], bulk)


def delete_label(req: Req) -> webob.Response:
    _admin(req, "delete_metering_label")
    with db.write(req.deps.engine) as conn:
        store.delete_label(conn, req.arg("id"))
    return empty_response(204)


def list_rules(req: Req) -> webob.Response:
    filters = req.filters(tuple(store.RULE_COLUMNS))
    if not req.is_admin:
        return listing(req, "metering_label_rules", [], {})
    with db.read(req.deps.engine) as conn:
        rows = store.list_rules(conn, filters)
    return listing(req, "metering_label_rules", [render_rule(r) for r in rows], {})


def show_rule(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        if not req.is_admin:
            raise errors.NotFound(f"Metering label rule '{req.arg('id')}' does not exist.",
                                  "MeteringLabelRuleNotFound")
        row = store.get_rule(conn, req.arg("id"))
    return shown(req, "metering_label_rule", render_rule(row))


def create_rule(req: Req) -> webob.Response:
    bodies, bulk = req.items("metering_label_rule", "metering_label_rules")
    items = []
    for body in bodies:
        data = attrs.parse(body, "metering_label_rule", attrs.METERING_LABEL_RULE,
                           creating=True, is_admin=req.is_admin,
                       caller=req.project_id)
        data.pop("project_id", None)
        if "metering_label_id" not in data:
            raise errors.BadRequest("Failed to parse request. Required attribute "
                                    "'metering_label_id' not specified", "HTTPBadRequest")
        items.append(data)
    _admin(req, "create_metering_label_rule")
    with db.write(req.deps.engine) as conn:
        rows = [store.create_rule(conn, **data) for data in items]
    return created(req, "metering_label_rule", "metering_label_rules",
                   [render_rule(r) for r in rows], bulk)


def delete_rule(req: Req) -> webob.Response:
    _admin(req, "delete_metering_label_rule")
    with db.write(req.deps.engine) as conn:
        store.delete_rule(conn, req.arg("id"))
    return empty_response(204)
