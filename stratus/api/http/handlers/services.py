"""/os-services: compute (and other) services in every cell.

From 2.53 a service is named by its uuid (``PUT /os-services/{uuid}`` with a body of
what changes); before, by its integer id for delete and by host and binary for the
update actions ``PUT /os-services/{enable,disable,disable-log-reason}`` (and, from
2.11, ``force-down``), each answering only what it changed.
"""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.binaries import own_name
from stratus.api.http.errors import HTTPError
from stratus.api.http.handlers import require_uuid
from stratus.api.http.schemas import (
    SERVICE_ACTION,
    SERVICE_ACTION_211,
    SERVICE_UPDATE,
    boolean,
)
from stratus.api.http.views import services as views
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import services as ops
from stratus.api.ops.servers import host_zones
from stratus.api.store.cells import COMPUTE_BINARY, list_services
from stratus.api.store.errors import BadRequest
from stratus.cells.services import Service


def _zone(req: Req, svc: Service, zones: dict[str, str]) -> str:
    if svc.binary == COMPUTE_BINARY:
        return zones.get(svc.host, req.api.default_az)
    return req.api.internal_az


def list_services_(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-services:list")
    binary = req.query("binary")
    listed, _failures = list_services(req.api.dbs, host=req.query("host") or None,
                                      binary=own_name(binary) if binary else None)
    zones = host_zones(req.api)
    return json_response({"services": [views.service(req, svc, _zone(req, svc, zones))
                                       for _cell, svc in listed]})


def _service_id(req: Req) -> str | int:
    """The path's service id: a uuid from 2.53, an integer before (400 otherwise)."""
    raw = req.arg("id")
    if req.want.supports("uuid_ids"):
        return require_uuid(raw)
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"id must be an integer (got {raw!r}).") from None


def update_service(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-services:update")
    if not req.want.supports("uuid_ids"):
        return _legacy_action(req, req.arg("id"))
    uuid = require_uuid(req.arg("id"))
    body = req.body(SERVICE_UPDATE)
    change = ops.Change()
    if "status" in body:
        if body["status"] == "enabled":
            if body.get("disabled_reason"):
                raise BadRequest("Specifying 'disabled_reason' with status 'enabled' is "
                                 "invalid.")
            change = ops.Change(disabled=False)
        else:
            change = ops.Change(disabled=True, disabled_reason=body.get("disabled_reason"))
    if "forced_down" in body:
        change = ops.Change(change.disabled, change.disabled_reason,
                            boolean(body["forced_down"]))
    if change == ops.Change():
        raise BadRequest("No updates were requested. Fields 'status' or 'forced_down' "
                         "should be specified.")
    svc, warnings = ops.update(req.api, uuid, change)
    req.warnings.extend(warnings)
    zone = _zone(req, svc, host_zones(req.api))
    return json_response({"service": views.service(req, svc, zone)})


_ACTIONS = ("enable", "disable", "disable-log-reason")


def _legacy_action(req: Req, action: str) -> webob.Response:
    """PUT /os-services/{action} before 2.53: the service named in the body."""
    forced = req.want.supports("service_forced_down")
    if action not in _ACTIONS and not (forced and action == "force-down"):
        raise HTTPError(404, "Unknown action")
    body = req.body(SERVICE_ACTION_211 if forced else SERVICE_ACTION)
    host, binary = body["host"], body["binary"]
    out: dict[str, Any] = {"host": host, "binary": binary}
    if action == "force-down":
        if "forced_down" not in body:
            raise BadRequest("Missing forced_down field")
        change = ops.Change(forced_down=boolean(body["forced_down"]))
        out["forced_down"] = change.forced_down
    elif action == "enable":
        change = ops.Change(disabled=False)
        out["status"] = "enabled"
    else:
        reason = body.get("disabled_reason")
        if action == "disable-log-reason" and reason is None:
            raise BadRequest("Missing disabled reason field")
        change = ops.Change(disabled=True,
                            disabled_reason=reason if action != "disable" else None)
        out["status"] = "disabled"
        if change.disabled_reason:
            out["disabled_reason"] = change.disabled_reason
    _svc, warnings = ops.update_by_host(req.api, host, own_name(binary), change)
    req.warnings.extend(warnings)
    return json_response({"service": out})


def delete_service(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-services:delete")
    ops.delete(req.api, _service_id(req))
    return empty_response(204)
