"""/os-server-groups: affinity, anti-affinity and their soft variants."""

from __future__ import annotations

import webob

from stratus.api.http import render
from stratus.api.http.schemas import SERVER_GROUP_CREATE, SERVER_GROUP_CREATE_POLICIES
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import quotas as quota_ops
from stratus.api.store import server_groups as store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.storage import engine as db


def list_groups(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-groups:index")
    project: str | None = req.project_id
    if req.query_bool("all_projects") and req.is_admin:
        project = None
    with db.read(req.api.dbs.api) as conn:
        groups = store.list_all(conn, project)
    return json_response({"server_groups": [render.server_group(req, g) for g in groups]})


def _get(req: Req) -> store.ServerGroup:
    uuid = req.arg("group_id")
    with db.read(req.api.dbs.api) as conn:
        group = store.get(conn, uuid)
    if group.project_id != req.project_id and not req.is_admin:
        raise NotFound(f"Instance group {uuid} could not be found.")
    return group


def show_group(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-groups:show")
    return json_response({"server_group": render.server_group(req, _get(req))})


def create_group(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-groups:create")
    if req.want.supports("server_group_policy"):
        data = req.body(SERVER_GROUP_CREATE)["server_group"]
        policy = data["policy"]
        max_per_host = (data.get("rules") or {}).get("max_server_per_host")
        if max_per_host is not None and policy != "anti-affinity":
            raise BadRequest("Only anti-affinity policy supports the "
                             "max_server_per_host rule.")
    else:
        data = req.body(SERVER_GROUP_CREATE_POLICIES)["server_group"]
        policy, max_per_host = data["policies"][0], None
        if policy.startswith("soft-") and not req.want.supports("soft_affinity"):
            raise BadRequest(f"Invalid input for field/attribute policies. Value: "
                             f"['{policy}']. '{policy}' is not one of ['anti-affinity', "
                             "'affinity'] (the soft policies need microversion 2.15).")
    quota_ops.check_server_groups(req.api.dbs.api, req.api.quota_defaults, req.project_id)
    with db.write(req.api.dbs.api) as conn:
        group = store.create(conn, name=data["name"], policy=policy,
                             project_id=req.project_id, user_id=req.ctx.user_id or "",
                             max_server_per_host=max_per_host)
    return json_response({"server_group": render.server_group(req, group)})


def delete_group(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-server-groups:delete")
    group = _get(req)
    with db.write(req.api.dbs.api) as conn:
        store.delete(conn, group.uuid)
    return empty_response(204)
