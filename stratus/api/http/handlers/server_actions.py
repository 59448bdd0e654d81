"""POST /servers/{id}/action (resize, migrate, confirmResize, revertResize) and
GET /os-migrations."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http.handlers.servers import _flavor, _owner_filter
from stratus.api.http.schemas import SERVER_ACTION
from stratus.api.http.wsgi import Req, empty_response, json_response, timestamp
from stratus.api.ops import moves as ops
from stratus.api.store.errors import BadRequest
from stratus.cells.moves import Migration

ACTIONS = ("resize", "migrate", "confirmResize", "revertResize")


def server_action(req: Req) -> webob.Response:
    raw = req.body(None)
    if isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) not in ACTIONS:
        raise BadRequest(f"There is no such action: {next(iter(raw))} (this cloud has "
                         f"{', '.join(ACTIONS)}).")
    body = req.body(SERVER_ACTION)
    action, data = next(iter(body.items()))
    uuid, owner = req.arg("server_id"), _owner_filter(req)
    if action == "resize":
        req.authorize("os_compute_api:servers:resize")
        ops.resize(req.api, uuid, owner, _flavor(req, data["flavorRef"]))
        return empty_response(202)
    if action == "migrate":
        host = (data or {}).get("host")
        req.authorize("os_compute_api:os-migrate-server:migrate" if host is None
                      else "os_compute_api:os-migrate-server:migrate:host")
        ops.migrate(req.api, uuid, host)
        return empty_response(202)
    if action == "confirmResize":
        req.authorize("os_compute_api:servers:confirm_resize")
        ops.confirm(req.api, uuid, owner)
        return empty_response(204)
    req.authorize("os_compute_api:servers:revert_resize")
    ops.revert(req.api, uuid, owner)
    return empty_response(202)


def _migration(req: Req, m: Migration) -> dict[str, Any]:
    return {"id": m.id, "uuid": m.uuid, "instance_uuid": m.instance_uuid,
            "status": m.status, "migration_type": m.migration_type,
            "source_compute": m.source_compute, "source_node": m.source_node,
            "dest_compute": m.dest_compute, "dest_node": m.dest_node, "dest_host": None,
            "source_region": None, "dest_region": None,
            "old_instance_type_id": m.old_flavor.get("name"),
            "new_instance_type_id": m.new_flavor.get("name"),
            "created_at": timestamp(m.created_at), "updated_at": timestamp(m.updated_at)}


def list_migrations(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-migrations:index")
    found = ops.listed(req.api, instance_uuid=req.query("instance_uuid"),
                       status=req.query("status"), host=req.query("host"),
                       migration_type=req.query("migration_type"))
    return json_response({"migrations": [_migration(req, m) for m in found]})
