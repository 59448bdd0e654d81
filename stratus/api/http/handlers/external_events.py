"""``POST /os-server-external-events`` (Nova's, for the network service and other
services): each event is answered per server: 200 delivered, 404 for a server that
does not exist, 422 for one without a host, 400 for a ``power-update`` without its
tag; 207 when not all are 200.

Stratus's computes have nothing waiting on network or volume events (their ports
are bound before a guest starts), so those are accepted and recorded in the API's
log only. ``power-update`` (2.76) is Nova's way for a bare-metal service to report a
node switched on or off behind the compute's back: the server becomes ACTIVE or
STOPPED, if it is in neither a task nor another state.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
import webob

from stratus.api.http.wsgi import Req, json_response
from stratus.api.ops import servers as server_ops
from stratus.api.store import servers as store
from stratus.cells import schema as cs
from stratus.cells import states as st
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)

NAMES = ["network-changed", "network-vif-plugged", "network-vif-unplugged",
         "network-vif-deleted"]
STATUSES = ["failed", "completed", "in-progress"]
POWER = {"POWER_ON": (st.STOPPED, st.ACTIVE, st.RUNNING),
         "POWER_OFF": (st.ACTIVE, st.STOPPED, st.SHUTDOWN)}


def _schema(req: Req) -> dict[str, Any]:
    names = list(NAMES)
    if req.want.supports("event_details_for_all"):   # 2.51: volume-extended
        names.append("volume-extended")
    if req.want.supports("power_update_event"):
        names.append("power-update")
    if req.want.supports("accelerator_event"):
        names.append("accelerator-request-bound")
    event = {"type": "object", "properties": {
        "name": {"type": "string", "enum": names},
        "server_uuid": {"type": "string", "minLength": 1, "maxLength": 36},
        "status": {"type": "string", "enum": STATUSES},
        "tag": {"type": "string", "maxLength": 255}},
        "required": ["name", "server_uuid"], "additionalProperties": False}
    return {"type": "object",
            "properties": {"events": {"type": "array", "minItems": 1, "items": event}},
            "required": ["events"], "additionalProperties": False}


def create_events(req: Req) -> webob.Response:
    body = req.body(_schema(req))
    req.authorize("os_compute_api:os-server-external-events:create")
    answered: list[dict[str, Any]] = []
    result = 200
    for event in body["events"]:
        out = dict(event)
        out["status"], out["code"] = _deliver(req, event)
        if out["code"] != 200:
            out["status"] = "failed"
            result = 207
        answered.append(out)
    return json_response({"events": answered}, status=result)


def _deliver(req: Req, event: dict[str, Any]) -> tuple[str, int]:
    uuid = event["server_uuid"]
    with db.read(req.api.dbs.api) as conn:
        mapping = store.get_mapping(conn, uuid)
    server = None
    if mapping is not None and not mapping.queued_for_delete:
        server = server_ops.load(req.api, [mapping]).get(uuid)
    if server is None:
        return "failed", 404
    if event["name"] == "power-update" and event.get("tag") not in POWER:
        return "failed", 400
    if not server.host or not server.cell_uuid:
        return "failed", 422
    LOG.info("event %s:%s for server %s on %s", event["name"], event.get("tag"), uuid,
             server.host)
    if event["name"] == "power-update":
        expect, vm_state, power = POWER[event["tag"]]
        t = cs.instances
        with db.write(req.api.dbs.engine(req.api.dbs.cell(server.cell_uuid))) as conn:
            conn.execute(sa.update(t).where(
                t.c.uuid == uuid, t.c.vm_state == expect, t.c.task_state.is_(None),
                t.c.deleted_at.is_(None)).values(vm_state=vm_state, power_state=power,
                                                 updated_at=req.api.clock()))
    return "completed", 200
