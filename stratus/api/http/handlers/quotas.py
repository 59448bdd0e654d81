"""/os-quota-sets, /os-quota-class-sets and /limits: a project's quota, as Nova shows it.

Shapes by microversion: from 2.57 the injected_file* quotas and the personality
limits are gone (Stratus's floor, 2.53, is past 2.36 and 2.50, which dropped the
network quotas). Per-user quotas are not kept: ``?user_id=`` is 400.
"""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http.schemas import (
    QUOTA_CLASS_SET_UPDATE,
    QUOTA_CLASS_SET_UPDATE_257,
    QUOTA_SET_UPDATE,
    QUOTA_SET_UPDATE_257,
)
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import quotas as ops
from stratus.api.store import quotas as store
from stratus.api.store.errors import BadRequest, Forbidden
from stratus.storage import engine as db

# Nova's /limits names for each quota resource.
_LIMIT_NAMES = {"cores": "maxTotalCores", "instances": "maxTotalInstances",
                "ram": "maxTotalRAMSize", "key_pairs": "maxTotalKeypairs",
                "metadata_items": "maxServerMeta", "server_groups": "maxServerGroups",
                "server_group_members": "maxServerGroupMembers",
                "injected_files": "maxPersonality",
                "injected_file_content_bytes": "maxPersonalitySize"}
_USED_NAMES = {"instances": "totalInstancesUsed", "cores": "totalCoresUsed",
               "ram": "totalRAMUsed", "server_groups": "totalServerGroupsUsed"}
_TRUE = {"true", "1", "yes", "on", "t", "y"}
MAX_ID = 255   # project ids and class names, as the tables keep them


def _shown(req: Req) -> tuple[str, ...]:
    """The quota resources this microversion shows."""
    if req.want.supports("no_injected_files"):
        return tuple(r for r in ops.RESOURCES if r not in ops.INJECTED)
    return ops.RESOURCES


def _no_user(req: Req) -> None:
    if req.query("user_id") is not None:
        raise BadRequest("Per-user quotas are not supported by Stratus: quotas are per "
                         "project (drop user_id).")


def _project(req: Req) -> str:
    project_id = req.arg("project_id")
    if len(project_id) > MAX_ID:
        raise BadRequest(f"A project id is at most {MAX_ID} characters.")
    return project_id


def _target(req: Req, action: str) -> str:
    """The project in the path; a caller who is not an admin may only name their own."""
    req.authorize(action)
    _no_user(req)
    project_id = _project(req)
    if project_id != req.project_id and not req.is_admin:
        # Nova's answer when the project-scoped rule does not match.
        raise Forbidden(f"Policy doesn't allow {action} to be performed.")
    return project_id


def _quota_set(req: Req, limits: dict[str, int], ident: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {r: limits[r] for r in _shown(req)}
    if ident is not None:
        body["id"] = ident
    return body


def show_quota_set(req: Req) -> webob.Response:
    project_id = _target(req, "os_compute_api:os-quota-sets:show")
    limits = ops.limits(req.api.dbs.api, req.api.quota_defaults, project_id)
    return json_response({"quota_set": _quota_set(req, limits, project_id)})


def show_quota_set_detail(req: Req) -> webob.Response:
    project_id = _target(req, "os_compute_api:os-quota-sets:detail")
    limits, used = ops.state(req.api.dbs.api, req.api.quota_defaults, project_id, shown=True,
                             servers=req.api.count_servers)
    body: dict[str, Any] = {r: {"in_use": used.of(r), "limit": limits[r], "reserved": 0}
                            for r in _shown(req)}
    body["id"] = project_id
    return json_response({"quota_set": body})


def show_defaults(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-sets:defaults")
    limits = ops.limits(req.api.dbs.api, req.api.quota_defaults, None)
    return json_response({"quota_set": _quota_set(req, limits, req.arg("project_id"))})


def _parsed(values: dict[str, Any]) -> dict[str, int]:
    return {r: int(v) for r, v in values.items() if r != "force"}


def update_quota_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-sets:update")
    _no_user(req)
    project_id = _project(req)
    schema = QUOTA_SET_UPDATE_257 if req.want.supports("no_injected_files") \
        else QUOTA_SET_UPDATE
    data = req.body(schema)["quota_set"]
    force = str(data.get("force", False)).strip().lower() in _TRUE
    wanted = _parsed(data)
    engine = req.api.dbs.api
    counted = ops.state(engine, req.api.quota_defaults, project_id, shown=True,
                        servers=req.api.count_servers)[1] \
        if req.api.count_servers is not None else None
    with db.write(engine) as conn:
        if not force:
            used = counted or store.usage(conn, project_id)
            for resource, limit in sorted(wanted.items()):
                if 0 <= limit < used.of(resource):
                    raise BadRequest(f"Quota limit {limit} for {resource} must be greater "
                                     f"than or equal to already used and reserved "
                                     f"{used.of(resource)}.")
        store.set_project_limits(conn, project_id, wanted)
        limits = ops.limits_in(conn, req.api.quota_defaults, project_id)
    return json_response({"quota_set": _quota_set(req, limits, None)})


def delete_quota_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-sets:delete")
    _no_user(req)
    with db.write(req.api.dbs.api) as conn:
        store.delete_project_limits(conn, _project(req))
    return empty_response(202)


def show_quota_class_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-class-sets:show")
    name = req.arg("class_name")
    with db.read(req.api.dbs.api) as conn:
        limits = dict(req.api.quota_defaults)
        limits.update(store.class_limits(conn, name))
    return json_response({"quota_class_set": _quota_set(req, limits, name)})


def update_quota_class_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-class-sets:update")
    name = req.arg("class_name")
    if len(name) > MAX_ID:
        raise BadRequest(f"A quota class name is at most {MAX_ID} characters.")
    schema = QUOTA_CLASS_SET_UPDATE_257 if req.want.supports("no_injected_files") \
        else QUOTA_CLASS_SET_UPDATE
    wanted = _parsed(req.body(schema)["quota_class_set"])
    with db.write(req.api.dbs.api) as conn:
        store.set_class_limits(conn, name, wanted)
        limits = dict(req.api.quota_defaults)
        limits.update(store.class_limits(conn, name))
    return json_response({"quota_class_set": _quota_set(req, limits, None)})


def show_limits(req: Req) -> webob.Response:
    req.authorize("os_compute_api:limits")
    project_id = req.project_id
    other = req.query("tenant_id")
    if other is not None and other != project_id:
        req.authorize("os_compute_api:limits:other_project")
        project_id = other
    limits, used = ops.state(req.api.dbs.api, req.api.quota_defaults, project_id, shown=True,
                             servers=req.api.count_servers)
    absolute: dict[str, int] = {_LIMIT_NAMES[r]: limits[r] for r in _shown(req)
                                if r in _LIMIT_NAMES}
    absolute.update({name: used.of(r) for r, name in _USED_NAMES.items()})
    return json_response({"limits": {"rate": [], "absolute": absolute}})
