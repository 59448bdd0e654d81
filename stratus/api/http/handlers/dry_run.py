"""POST /stratus/dry-run (Stratus only, admin): would this boot fit, where, and if not why.

The body is a boot's (``POST /servers``); the answer is 200 with ``{"dry_run": {fits,
servers, message, category, hosts, placements, details, notes}}`` and nothing is
recorded or claimed.
"""

from __future__ import annotations

import webob

from stratus.api.http.handlers.servers import _flavor
from stratus.api.http.schemas import SERVER_CREATE
from stratus.api.http.wsgi import Req, json_response
from stratus.api.ops import dry_run as ops
from stratus.api.ops import ports as port_ops
from stratus.api.ops.servers import Boot
from stratus.api.store.errors import BadRequest


def dry_run(req: Req) -> webob.Response:
    req.authorize("stratus:servers:dry_run")
    body = req.body(SERVER_CREATE)
    data = body["server"]
    hints = body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints") or {}
    min_count = int(data.get("min_count", 1))
    max_count = int(data.get("max_count", min_count))
    if min_count < 1 or max_count < 1:
        raise BadRequest("min_count and max_count must be at least 1.")
    if min_count > max_count:
        raise BadRequest(f"min_count ({min_count}) must be <= max_count ({max_count}).")
    boot = Boot(name=data["name"], flavor=_flavor(req, data["flavorRef"]),
                min_count=min_count, max_count=max_count, project_id=req.project_id,
                user_id=req.ctx.user_id or "", availability_zone=data.get("availability_zone"),
                group=hints.get("group"), networks=port_ops.parse(data.get("networks")))
    return json_response({"dry_run": ops.dry_run(req.api, boot, is_admin=req.is_admin)})
