"""/v2.0/qos/policies, their rules (/v2.0/qos/policies/{id}/<type>_rules) and
/v2.0/qos/rule-types."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http import attrs, render
from stratus.network.http.wsgi import Req, empty_response, json_response, listing
from stratus.network.model import RULE_TYPES, RuleType
from stratus.network.store import qos as store
from stratus.storage import engine as db

POLICY_FILTERS = (*store.POLICY_COLUMNS,)


def _policy(req: Req, conn: Any, *, writing: bool = False) -> dict[str, Any]:
    row = store.get_policy(conn, req.arg("id"))
    if req.scope is not None and row["project_id"] != req.scope:
        if not row["shared"]:
            raise errors.not_found("policy", row["id"])
        if writing:
            raise errors.Forbidden("(rule:update_policy) is disallowed by policy")
    return row


def list_policies(req: Req) -> webob.Response:
    filters = req.filters(POLICY_FILTERS)
    with db.read(req.deps.engine) as conn:
        rows = store.list_policies(conn, filters, req.scope)
    return listing(req, "policies", [render.policy(r) for r in rows], {})


def show_policy(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _policy(req, conn)
    return json_response({"policy": render.policy(row)})


def create_policy(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "policy", attrs.POLICY, creating=True, is_admin=req.is_admin)
    data.setdefault("project_id", req.project_id)
    with db.write(req.deps.engine) as conn:
        row = store.create_policy(conn, **data)
    return json_response({"policy": render.policy(row)}, status=201)


def update_policy(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "policy", attrs.POLICY, creating=False, is_admin=req.is_admin)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True)
        row = store.update_policy(conn, req.arg("id"), data, req.expect_revision())
    return json_response({"policy": render.policy(row)})


def delete_policy(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True)
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
    return json_response({kind.member: render.rule(rule)})


def create_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    values = _rule_values(req, kind, creating=True)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True)
        rule = store.create_rule(conn, req.arg("id"), kind.name,
                                 values.get("direction", kind.default_direction),
                                 values["value"], values.get("burst", 0))
    return json_response({kind.member: render.rule(rule)}, status=201)


def update_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    values = _rule_values(req, kind, creating=False)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True)
        rule = store.update_rule(conn, req.arg("id"), kind.name, req.arg("rule_id"), **values)
    return json_response({kind.member: render.rule(rule)})


def delete_rule(req: Req) -> webob.Response:
    kind = _kind(req)
    with db.write(req.deps.engine) as conn:
        _policy(req, conn, writing=True)
        store.delete_rule(conn, req.arg("id"), kind.name, req.arg("rule_id"))
    return empty_response(204)


def list_rule_types(req: Req) -> webob.Response:
    # all_supported and all_rules change nothing here: every type is supported.
    filters = req.filters(("type", "all_supported", "all_rules"))
    wanted = {"type": filters["type"]} if "type" in filters else {}
    return listing(req, "rule_types", [{"type": name} for name in sorted(RULE_TYPES)], wanted)


def show_rule_type(req: Req) -> webob.Response:
    name = req.arg("type")
    if name not in RULE_TYPES:
        raise errors.NotFound(f"QoS rule type {name} could not be found.", "QosRuleTypeNotFound")
    kind = RULE_TYPES[name]
    parameters = [{"parameter_name": kind.value_field, "parameter_type": "range",
                   "parameter_values": {"start": 0, "end": kind.value_max}}]
    if kind.directions:
        parameters.append({"parameter_name": "direction", "parameter_type": "choices",
                           "parameter_values": list(kind.directions)})
    return json_response({"rule_type": {"type": name, "drivers": [
        {"name": "stratus", "supported_parameters": parameters}]}})
