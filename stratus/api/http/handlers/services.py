"""/os-services: compute (and other) services in every cell; 2.53 shapes (uuid ids)."""

from __future__ import annotations

import webob

from stratus.api.http import render
from stratus.api.http.handlers import require_uuid
from stratus.api.http.schemas import SERVICE_UPDATE
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
    listed, _failures = list_services(req.api.dbs, host=req.query("host"),
                                      binary=req.query("binary"))
    zones = host_zones(req.api)
    return json_response({"services": [render.service(req, svc, _zone(req, svc, zones))
                                       for _cell, svc in listed]})


def update_service(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-services:update")
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
        change = ops.Change(change.disabled, change.disabled_reason, body["forced_down"])
    if change == ops.Change():
        raise BadRequest("No updates were requested. Fields 'status' or 'forced_down' "
                         "should be specified.")
    svc, warnings = ops.update(req.api, uuid, change)
    req.warnings.extend(warnings)
    zone = _zone(req, svc, host_zones(req.api))
    return json_response({"service": render.service(req, svc, zone)})


def delete_service(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-services:delete")
    ops.delete(req.api, require_uuid(req.arg("id")))
    return empty_response(204)
