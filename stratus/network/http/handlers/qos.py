"""/v2.0/qos/policies, their rules (/v2.0/qos/policies/{id}/<type>_rules) and
/v2.0/qos/rule-types.

Neutron's default policy: only admins create, change or delete policies and rules,
and see rule types' details; a project sees its own policies and those shared with
it (the ``shared`` flag, or an RBAC grant)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http import attrs, render
from stratus.network.http.wsgi import Req, created, empty_response, json_response, listing, shown
from stratus.network.model import RULE_TYPES, RuleType
from stratus.network.store import access, tags
from stratus.network.store import qos as store
from stratus.storage import engine as db

POLICY_FILTERS = (*store.POLICY_COLUMNS,)


def _policy(req: Req, conn: Any, *, writing: bool = False,
            rule: str = "update_policy") -> dict[str, Any]:
    """The policy if the caller may see it (404 otherwise); ``writing``: 403 unless an
    admin."""
    row = store.get_policy(conn, req.arg("id"))
    if not access.can(conn, "qos_policy", row["id"], req.scope):
        raise errors.not_found("policy", row["id"])
    if writing:
        _admin(req, rule)
    return row


def _admin(req: Req, rule: str) -> None:
    if not req.is_admin:
        raise errors.Forbidden(f"(rule:{rule}) is disallowed by policy")


def _rows(req: Req, conn: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tags.attach(conn, rows)
    if req.scope is not None:
        granted = access.grants_to(conn, "qos_policy", [r["id"] for r in rows], req.scope)
        for row in rows:
            row["granted"] = row["id"] in granted
    return rows


def list_policies(req: Req) -> webob.Response:
    filters = req.filters(POLICY_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = _rows(req, conn, store.list_policies(conn, filters, req.scope))
    rest = {k: v for k, v in filters.items() if k not in store.POLICY_COLUMNS}
    return listing(req, "policies", [render.policy(r) for r in rows], rest)


def show_policy(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _rows(req, conn, [_policy(req, conn)])[0]
    return shown(req, "policy", render.policy(row))


def create_policy(req: Req) -> webob.Response:
    bodies, bulk = req.items("policy", "policies")
    items = []
    for body in bodies:
        data = attrs.parse(body, "policy", attrs.POLICY, creating=True, is_admin=req.is_admin,
                       caller=req.project_id)
        data.setdefault("project_id", req.project_id)
        items.append(data)
    _admin(req, "create_policy")
    with db.write(req.deps.engine) as conn:
        rows = _rows(req, conn, [store.create_policy(conn, **data) for data in items])
    return created(req, "policy", "policies", [render.policy(r) for r in rows], bulk)


def update_policy(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "policy", attrs.POLICY, creating=False, is_admin=req.is_admin,
                       caller=req.project_id)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True)
        row = store.update_policy(conn, req.arg("id"), data, req.expect_revision())
        row = _rows(req, conn, [row])[0]
    return shown(req, "policy", render.policy(row))


def delete_policy(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True, rule="delete_policy")
        store.delete_policy(conn, req.arg("id"))
    return empty_response(204)


# ---- rules ---------------------------------------------------------------------------


def _kind(req: Req) -> RuleType:
    """The rule type the URL's collection names (``minimum_bandwidth_rules``). An unknown
    ``*_rules`` type is a 400 that lists the known ones (Neutron answers 404, as for any
    unknown path, which tells a client less); any other path is 404."""
    collection = req.arg("rules")
    for kind in RULE_TYPES.values():
        if kind.collection == collection:
            return kind
    if collection.endswith("_rules"):
        raise errors.BadRequest(f"Unknown QoS rule type {collection[:-len('_rules')]!r}; "
                                f"known: {', '.join(sorted(RULE_TYPES))}.", "InvalidInput")
    raise errors.NotFound("The resource could not be found.", "HTTPNotFound")


def _rule_values(req: Req, kind: RuleType, creating: bool) -> dict[str, Any]:
    data = attrs.parse(req.body(), kind.member, attrs.rule_attrs(kind.name),
                       creating=creating, is_admin=True)
    if creating and kind.value_field not in data:
        raise errors.BadRequest(f"Failed to parse request. Required attribute "
                                f"'{kind.value_field}' not specified", "HTTPBadRequest")
    out: dict[str, Any] = {}
    if kind.value_field in data:
        out["value"] = data[kind.value_field]
    if "direction" in data:
        out["direction"] = data["direction"]
    if kind.burst_field and kind.burst_field in data:
        out["burst"] = data[kind.burst_field]
    return out


def list_rules(req: Req) -> webob.Response:
    kind = _kind(req)
    with db.read(req.deps.engine) as conn:
        _policy(req, conn)
        rules = store.list_rules(conn, req.arg("id"), kind.name)
    return listing(req, kind.collection, [render.rule(r) for r in rules],
                   req.filters(("id", "direction", kind.value_field)))


def show_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    with db.read(req.deps.engine) as conn:
        _policy(req, conn)
        rule = store.get_rule(conn, req.arg("id"), kind.name, req.arg("rule_id"))
    return shown(req, kind.member, render.rule(rule))


def create_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    _admin(req, f"create_policy_{kind.member}")
    values = _rule_values(req, kind, creating=True)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn)
        rule = store.create_rule(conn, req.arg("id"), kind.name,
                                 values.get("direction", kind.default_direction),
                                 values["value"], values.get("burst", 0))
    return shown(req, kind.member, render.rule(rule), 201)


def update_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    values = _rule_values(req, kind, creating=False)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True, rule=f"update_policy_{kind.member}")
        rule = store.update_rule(conn, req.arg("id"), kind.name, req.arg("rule_id"), **values)
    return shown(req, kind.member, render.rule(rule))


def delete_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True, rule=f"delete_policy_{kind.member}")
        store.delete_rule(conn, req.arg("id"), kind.name, req.arg("rule_id"))
    return empty_response(204)


def list_rule_types(req: Req) -> webob.Response:
    # all_supported and all_rules change nothing here: every type is supported.
    filters = req.filters(("type", "all_supported", "all_rules"))
    wanted = {"type": filters["type"]} if "type" in filters else {}
    return listing(req, "rule_types", [{"type": name} for name in sorted(RULE_TYPES)], wanted)


def show_rule_type(req: Req) -> webob.Response:
    _admin(req, "get_rule_type")
    name = req.arg("type")
    if name not in RULE_TYPES:
        raise errors.NotFound(f"QoS rule type {name} could not be found.", "QosRuleTypeNotFound")
    kind = RULE_TYPES[name]
    parameters: list[dict[str, Any]] = [
                  {"parameter_name": kind.value_field, "parameter_type": "choices",
                   "parameter_values": list(kind.choices)} if kind.choices else
                  {"parameter_name": kind.value_field, "parameter_type": "range",
                   "parameter_values": {"start": 0, "end": kind.value_max}}]
    if kind.directions:
        parameters.append({"parameter_name": "direction", "parameter_type": "choices",
                           "parameter_values": list(kind.directions)})
    return json_response({"rule_type": {"type": name, "drivers": [
        {"name": "stratus", "supported_parameters": parameters}]}})
