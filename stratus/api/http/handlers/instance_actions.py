"""GET /servers/{id}/os-instance-actions and /os-instance-actions/{request_id}: what was
done to a server and how each step went, shaped as Nova's API reference has them.

Per microversion (Stratus serves 2.53 and later): events are shown to the server's
owner too (2.51); ``updated_at``, ``limit``, ``marker`` and ``changes-since`` from 2.58;
``hostId`` for everyone and ``host`` for admins from 2.62; ``changes-before`` from
2.66; ``details`` (the failure's reason) from 2.84. ``traceback`` is admin-only, as
Nova's default policy has it; Stratus keeps no tracebacks, so it carries the same
one-line reason.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

import webob

from stratus.api.http import policy
from stratus.api.http.handlers.servers import _owner_filter
from stratus.api.http.wsgi import Req, json_response
from stratus.api.ops import servers as server_ops
from stratus.api.store import servers as server_store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.api.store.servers import Server
from stratus.cells import actions
from stratus.storage import engine as db

MAX_LIMIT = 1000


def _time(when: dt.datetime | None) -> str | None:
    """Nova's format for these times: ``2018-04-25T01:26:29.000000``."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") if when else None


def _action(req: Req, a: actions.Action) -> dict[str, Any]:
    body: dict[str, Any] = {"action": a.action, "instance_uuid": a.instance_uuid,
                            "request_id": a.request_id, "user_id": a.user_id,
                            "project_id": a.project_id, "start_time": _time(a.start_time),
                            "message": a.message}
    if req.want.supports("action_paging"):
        body["updated_at"] = _time(a.updated_at or a.start_time)
    return body


def _event(req: Req, e: actions.Event, project_id: str, admin_view: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"event": e.event, "start_time": _time(e.start_time),
                            "finish_time": _time(e.finish_time), "result": e.result}
    if admin_view:
        body["traceback"] = e.details
    if req.want.supports("action_event_host"):
        if admin_view:
            body["host"] = e.host
        body["hostId"] = (hashlib.sha224((project_id + e.host).encode()).hexdigest()
                          if e.host else "")
    if req.want.supports("action_event_details"):
        body["details"] = e.details
    return body


@dataclass(frozen=True)
class _Target:
    """The server whose actions are asked for: live, or (from 2.21) deleted."""

    uuid: str
    cell_uuid: str | None
    project_id: str


def _server(req: Req) -> _Target:
    """The caller's server; from 2.21 a deleted one too (Nova reads its actions with
    ``read_deleted``), found by its mapping, which outlives it."""
    owner = _owner_filter(req)
    try:
        server: Server = server_ops.get(req.api, req.arg("server_id"), owner)
        return _Target(server.uuid, server.cell_uuid, server.project_id)
    except NotFound:
        if not req.want.supports("actions_of_deleted"):
            raise
        with db.read(req.api.dbs.api) as conn:
            mapping = server_store.get_mapping(conn, req.arg("server_id"))
        if mapping is None or not mapping.queued_for_delete or not mapping.cell_uuid \
                or (owner is not None and mapping.project_id != owner):
            raise
        return _Target(mapping.instance_uuid, mapping.cell_uuid, mapping.project_id)


def _parse_time(req: Req, name: str) -> dt.datetime | None:
    raw = req.query(name)
    if raw is None:
        return None
    try:
        when = dt.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        if when.tzinfo is not None:
            when = when.astimezone(dt.UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        raise BadRequest(f"Invalid input for query parameters {name}. Value: {raw}. "
                         "It is not an ISO 8601 date-time.") from None
    return when


def _limit(req: Req) -> int | None:
    raw = req.query("limit")
    if raw is None:
        return None
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if limit < 0:
        raise BadRequest(f"Invalid input for query parameters limit. Value: {raw}. "
                         "It must be a non-negative integer.")
    return min(limit, MAX_LIMIT)


def list_actions(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-instance-actions:list")
    server = _server(req)
    paging = req.want.supports("action_paging")
    limit = _limit(req) if paging else None
    marker = req.query("marker") if paging else None
    since = _parse_time(req, "changes-since") if paging else None
    before = (_parse_time(req, "changes-before")
              if req.want.supports("changes_before") else None)
    if since and before and before < since:
        raise BadRequest("The value of changes-since must be less than or equal to "
                         "changes-before.")
    found: list[actions.Action] = []
    if server.cell_uuid:   # a server no cell holds yet has done nothing so far
        try:
            with db.read(req.api.dbs.engine(req.api.dbs.cell(server.cell_uuid))) as conn:
                found = actions.listed(conn, server.uuid, limit=limit,
                                       after_request_id=marker, changes_since=since,
                                       changes_before=before)
        except KeyError:
            raise BadRequest(f"Marker {marker} could not be found.") from None
    elif marker is not None:
        raise BadRequest(f"Marker {marker} could not be found.")
    body: dict[str, Any] = {"instanceActions": [_action(req, a) for a in found]}
    if limit and len(found) == limit:
        body["links"] = [{"rel": "next", "href": req.link(
            f"/servers/{server.uuid}/os-instance-actions?limit={limit}"
            f"&marker={found[-1].request_id}")[0]["href"]}]
    return json_response(body)


def show_action(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-instance-actions:show")
    server = _server(req)
    wanted = req.arg("request_id")
    action = None
    if server.cell_uuid:
        with db.read(req.api.dbs.engine(req.api.dbs.cell(server.cell_uuid))) as conn:
            action = actions.get(conn, server.uuid, wanted)
            steps = actions.events(conn, action.id) if action else []
    if action is None:
        raise NotFound(f"Action {wanted} not found")
    admin_view = policy.allowed(req.ctx, "os_compute_api:os-instance-actions:events")
    body = _action(req, action)
    # Newest first, as Nova lists them.
    body["events"] = [_event(req, e, action.project_id or server.project_id, admin_view)
                      for e in reversed(steps)]
    return json_response({"instanceAction": body})
