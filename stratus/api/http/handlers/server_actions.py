"""POST /servers/{id}/action (the moves: resize, migrate, confirmResize, revertResize,
os-migrateLive, evacuate, shelve, shelveOffload, unshelve), GET /os-migrations and
GET /servers/{id}/migrations."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http.handlers import lifecycle_actions, network_proxies, security_groups
from stratus.api.http.handlers.servers import _flavor, _owner_filter
from stratus.api.http.schemas import SERVER_ACTION
from stratus.api.http.wsgi import Req, empty_response, json_response, timestamp
from stratus.api.ops import live_moves, server_update, shelving
from stratus.api.ops import moves as ops
from stratus.api.ops import servers as server_ops
from stratus.api.store import flavors as flavor_store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.cells import moves
from stratus.cells.moves import Migration
from stratus.storage import engine as db

ACTIONS = ("resize", "migrate", "confirmResize", "revertResize", "os-migrateLive",
           "evacuate", "shelve", "shelveOffload", "unshelve")


def server_action(req: Req) -> webob.Response:
    raw = req.body(None)
    if isinstance(raw, dict) and len(raw) == 1:
        action = next(iter(raw))
        lifecycle = lifecycle_actions.ACTIONS.get(action) or \
            security_groups.ACTIONS.get(action) or network_proxies.ACTIONS.get(action)
        if lifecycle is not None:
            return lifecycle(req, raw)
        if action not in ACTIONS:
            known = sorted((*ACTIONS, *lifecycle_actions.ACTIONS, *security_groups.ACTIONS,
                            *network_proxies.ACTIONS))
            raise BadRequest(f"There is no such action: {action} (this cloud has "
                             f"{', '.join(known)}).")
    body = req.body(SERVER_ACTION)
    action, data = next(iter(body.items()))
    uuid, owner = req.arg("server_id"), _owner_filter(req)
    if action == "resize":
        req.authorize("os_compute_api:servers:resize")
        ops.resize(req.api, uuid, owner, _flavor(req, data["flavorRef"]), req.caller)
        if "OS-DCF:diskConfig" in data:   # Nova records it with the resize
            server_update.set_disk_config(req.api, uuid, data["OS-DCF:diskConfig"] == "AUTO")
        return empty_response(202)
    if action == "migrate":
        host = (data or {}).get("host")
        req.authorize("os_compute_api:os-migrate-server:migrate" if host is None
                      else "os_compute_api:os-migrate-server:migrate:host")
        ops.migrate(req.api, uuid, host, req.caller)
        return empty_response(202)
    if action == "confirmResize":
        req.authorize("os_compute_api:servers:confirm_resize")
        ops.confirm(req.api, uuid, owner, req.caller)
        return empty_response(204)
    if action == "revertResize":
        req.authorize("os_compute_api:servers:revert_resize")
        ops.revert(req.api, uuid, owner, req.caller)
        return empty_response(202)
    return _other_moves(req, action, data or {}, uuid, owner)


def _other_moves(req: Req, action: str, data: dict[str, Any], uuid: str,
                 owner: str | None) -> webob.Response:
    if action == "os-migrateLive":
        req.authorize("os_compute_api:os-migrate-server:migrate_live")
        live_moves.live_migrate(req.api, uuid, data.get("host"), req.caller)
        return empty_response(202)
    if action == "evacuate":
        req.authorize("os_compute_api:os-evacuate")
        live_moves.evacuate(req.api, uuid, data.get("host"), req.caller)
        # 200 and no body, as Nova answers from 2.14 (Stratus's floor is 2.53).
        return empty_response(200)
    if action == "shelve":
        req.authorize("os_compute_api:os-shelve:shelve")
        shelving.shelve(req.api, uuid, owner, req.caller)
        return empty_response(202)
    if action == "shelveOffload":
        req.authorize("os_compute_api:os-shelve:shelve_offload")
        shelving.shelve_offload(req.api, uuid, req.caller)
        return empty_response(202)
    req.authorize("os_compute_api:os-shelve:unshelve")
    zone, host = data.get("availability_zone"), data.get("host")
    if zone and not req.want.supports("unshelve_zone"):
        raise BadRequest("An availability zone for unshelve needs microversion 2.77.")
    if host:
        if not req.want.supports("unshelve_host"):
            raise BadRequest("A host for unshelve needs microversion 2.91.")
        req.authorize("os_compute_api:os-shelve:unshelve_to_host")
    shelving.unshelve(req.api, uuid, owner, availability_zone=zone, host=host,
                       caller=req.caller)
    return empty_response(202)



def _flavor_ids(req: Req, found: list[Migration]) -> dict[str, int]:
    """The flavors' database ids (Nova's ``instance_type_id``), by flavor id, of the
    flavors these migrations moved from and to (a flavor deleted since: none)."""
    wanted = {str(f["flavorid"]) for m in found for f in (m.old_flavor, m.new_flavor)
              if f.get("flavorid")}
    if not wanted:
        return {}
    with db.read(req.api.dbs.api) as conn:
        return flavor_store.internal_ids(conn, wanted)


def _migration(req: Req, m: Migration, flavor_ids: dict[str, int]) -> dict[str, Any]:
    """Nova's os-migrations entry: ``migration_type`` from 2.23, ``uuid`` from 2.59."""
    out: dict[str, Any] = {
        "id": m.id, "instance_uuid": m.instance_uuid, "status": m.status,
        "source_compute": m.source_compute, "source_node": m.source_node,
        "dest_compute": m.dest_compute, "dest_node": m.dest_node, "dest_host": None,
        "old_instance_type_id": flavor_ids.get(str(m.old_flavor.get("flavorid"))),
        "new_instance_type_id": flavor_ids.get(str(m.new_flavor.get("flavorid"))),
        "created_at": timestamp(m.created_at), "updated_at": timestamp(m.updated_at)}
    if req.want.supports("server_migrations"):
        out["migration_type"] = m.migration_type
    if req.want.supports("migration_paging"):
        out["uuid"] = m.uuid
    return out


LIVE_STATUSES = (moves.ACCEPTED, moves.PREPARING, moves.RUNNING)


def _server_migration(req: Req, m: Migration) -> dict[str, Any]:
    return {"id": m.id, "uuid": m.uuid, "server_uuid": m.instance_uuid,
            "status": m.status, "source_compute": m.source_compute,
            "source_node": m.source_node, "dest_compute": m.dest_compute,
            "dest_node": m.dest_node, "dest_host": None,
            "memory_total_bytes": None, "memory_processed_bytes": None,
            "memory_remaining_bytes": None, "disk_total_bytes": None,
            "disk_processed_bytes": None, "disk_remaining_bytes": None,
            "created_at": timestamp(m.created_at), "updated_at": timestamp(m.updated_at),
            "user_id": None, "project_id": None}


def _live(req: Req) -> list[Migration]:
    server = server_ops.get(req.api, req.arg("server_id"), None)
    return [m for m in ops.listed(req.api, instance_uuid=server.uuid)
            if m.migration_type == moves.LIVE_MIGRATION and m.status in LIVE_STATUSES]


def list_server_migrations(req: Req) -> webob.Response:
    """The server's live migrations in progress (Nova's /servers/{id}/migrations)."""
    req.authorize("os_compute_api:servers:migrations:index")
    return json_response({"migrations": [_server_migration(req, m) for m in _live(req)]})


def show_server_migration(req: Req) -> webob.Response:
    req.authorize("os_compute_api:servers:migrations:show")
    wanted = req.arg("migration_id")
    for m in _live(req):
        if str(m.id) == wanted or m.uuid == wanted:
            return json_response({"migration": _server_migration(req, m)})
    raise NotFound(f"Migration {wanted} for server {req.arg('server_id')} is not in "
                   "progress (only live migrations in progress are shown here; "
                   "GET /os-migrations has every migration).")


def list_migrations(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-migrations:index")
    found = ops.listed(req.api, instance_uuid=req.query("instance_uuid"),
                       status=req.query("status"), host=req.query("host"),
                       migration_type=req.query("migration_type"))
    flavor_ids = _flavor_ids(req, found)
    return json_response({"migrations": [_migration(req, m, flavor_ids) for m in found]})
