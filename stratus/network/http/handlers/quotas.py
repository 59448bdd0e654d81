"""/v2.0/quotas: the limits of a project (admins change them; a project reads its own)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.network import errors
from stratus.network.http.attrs import integer
from stratus.network.http.wsgi import Req, empty_response, json_response
from stratus.network.store import quotas as store
from stratus.storage import engine as db


def _readable(req: Req, project: str) -> None:
    if req.scope is not None and project != req.scope:
        raise errors.Forbidden("(rule:get_quota) is disallowed by policy")


def _admin(req: Req, rule: str) -> None:
    if not req.is_admin:
        raise errors.Forbidden(f"(rule:{rule}) is disallowed by policy")


def list_quotas(req: Req) -> webob.Response:
    _admin(req, "get_quota")
    with db.read(req.deps.engine) as conn:
        body = [{"project_id": p, "tenant_id": p, **store.limits(conn, p)}
                for p in store.projects(conn)]
    return json_response({"quotas": body})


def show_quota(req: Req) -> webob.Response:
    project = req.arg("project")
    _readable(req, project)
    with db.read(req.deps.engine) as conn:
        return json_response({"quota": store.limits(conn, project)})


def show_defaults(req: Req) -> webob.Response:
    return json_response({"quota": dict(store.DEFAULTS)})


def show_details(req: Req) -> webob.Response:
    project = req.arg("project")
    _readable(req, project)
    with db.read(req.deps.engine) as conn:
        return json_response({"quota": store.details(conn, project)})


def update_quota(req: Req) -> webob.Response:
    _admin(req, "update_quota")
    body: Any = req.body()
    values = body.get("quota") if isinstance(body, dict) else None
    if not isinstance(values, dict) or not values:
        raise errors.BadRequest("Unable to find 'quota' in request body", "HTTPBadRequest")
    values = dict(values)
    # Neutron (2025.1): a limit below what the project uses is refused unless forced;
    # check_limit, the old way of asking for that check, is accepted and ignored.
    force = values.pop("force", None) is True
    values.pop("check_limit", None)
    unknown = sorted(k for k in values if k not in store.DEFAULTS)
    if unknown:
        raise errors.BadRequest(f"Unrecognized attribute(s) '{', '.join(unknown)}'",
                                "HTTPBadRequest")
    checked = {k: integer(-1)(k, v) for k, v in values.items()}
    with db.write(req.deps.engine) as conn:
        project = req.arg("project")
        for resource, limit in checked.items():
            in_use = store.used(conn, project, resource)
            if not force and limit != -1 and in_use > limit:
                raise errors.BadRequest(
                    f"Quota limit {limit} for {resource} must be greater than or equal to "
                    f"already used {in_use}", "HTTPBadRequest")
        limits = store.update(conn, project, checked)
    return json_response({"quota": limits})


def delete_quota(req: Req) -> webob.Response:
    _admin(req, "delete_quota")
    with db.write(req.deps.engine) as conn:
        store.reset(conn, req.arg("project"))
    return empty_response(204)
