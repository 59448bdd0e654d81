"""/v2.0/rbac-policies: grant a network, QoS policy, security group, subnet pool or
address scope to another project (or to all). Only the object's owner (or an admin)
grants it; a project sees the grants it made and those naming it."""

from __future__ import annotations

from typing import Any

import webob
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network.http import attrs
from stratus.network.http.wsgi import Req, created, empty_response, listing, shown
from stratus.network.store import access, quotas
from stratus.network.store import rbac as store
from stratus.storage import engine as db


def render(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "project_id": row["project_id"], "tenant_id": row["project_id"],
            "object_type": row["object_type"], "object_id": row["object_id"],
            "target_tenant": row["target_project"], "action": row["action"]}


def _visible(req: Req, conn: Connection, policy_id: str) -> dict[str, Any]:
    row = store.get(conn, policy_id)
    if req.scope is not None and row["project_id"] != req.scope:
        raise errors.NotFound(f"RBAC policy {policy_id} could not be found.",
                              "RbacPolicyNotFound")
    return row


def _owned(req: Req, conn: Connection, policy_id: str) -> dict[str, Any]:
    row = _visible(req, conn, policy_id)
    if req.scope is not None and row["project_id"] != req.scope:
        raise errors.Forbidden("(rule:update_rbac_policy) is disallowed by policy")
    return row


def list_policies(req: Req) -> webob.Response:
    filters = req.filters(tuple(store.COLUMNS))
    with db.read(req.deps.engine) as conn:
        rows = store.list_all(conn, filters, req.scope)
    return listing(req, "rbac_policies", [render(r) for r in rows], {})


def show_policy(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        row = _visible(req, conn, req.arg("id"))
    return shown(req, "rbac_policy", render(row))


def _parsed(req: Req, body: Any) -> dict[str, Any]:
    data = attrs.parse(body, "rbac_policy", attrs.RBAC_POLICY, creating=True,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    for required in ("object_type", "object_id", "target_project", "action"):
        if required not in data:
            name = "target_tenant" if required == "target_project" else required
            raise errors.BadRequest(f"Failed to parse request. Required attribute '{name}' "
                                    "not specified", "HTTPBadRequest")
    data.setdefault("project_id", req.project_id)
    store.check_action(data["object_type"], data["action"])
    _restrict_wildcard(req, data["target_project"], "create")
    return data


def _restrict_wildcard(req: Req, target: str, verb: str) -> None:
    """Neutron's ``restrict_wildcard`` rule: only admins grant to every project."""
    if target == access.WILDCARD and not req.is_admin:
        raise errors.Forbidden(f"(rule:{verb}_rbac_policy and "
                               f"rule:{verb}_rbac_policy:target_tenant) is disallowed by "
                               "policy", "PolicyNotAuthorized")


def create_policy(req: Req) -> webob.Response:
    bodies, bulk = req.items("rbac_policy", "rbac_policies")
    items = [_parsed(req, body) for body in bodies]
    with db.write(req.deps.engine) as conn:
        rows = []
        for data in items:
            obj = store.object_of(conn, data["object_type"], data["object_id"])
            if obj is None or not access.can(conn, data["object_type"], data["object_id"],
                                             req.scope):
                raise errors.NotFound(f"{data['object_type']} {data['object_id']} could not "
                                      "be found.", "NotFound")
            if req.scope is not None and obj["project_id"] != req.scope:
                raise errors.BadRequest(f"Invalid input for operation: {data['object_type']} "
                                        f"{data['object_id']} is not yours to share.",
                                        "InvalidInput")
            rows.append(store.create(conn, **data))
            quotas.check(conn, data["project_id"], "rbac_policy")
    return created(req, "rbac_policy", "rbac_policies", [render(r) for r in rows], bulk)


def update_policy(req: Req) -> webob.Response:
    data = attrs.parse(req.body(), "rbac_policy", attrs.RBAC_POLICY, creating=False,
                       is_admin=req.is_admin,
                       caller=req.project_id)
    with db.write(req.deps.engine) as conn:
        row = _owned(req, conn, req.arg("id"))
        if "target_project" in data:
            _restrict_wildcard(req, data["target_project"], "update")
            row = store.update(conn, req.arg("id"), data["target_project"])
    return shown(req, "rbac_policy", render(row))


def delete_policy(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        _owned(req, conn, req.arg("id"))
        store.delete(conn, req.arg("id"))
    return empty_response(204)
