"""/servers/{id}/os-interface: a server's ports (list, show, attach, detach)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http.handlers.servers import _owner_filter
from stratus.api.http.schemas import INTERFACE_ATTACH
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import interfaces as ops
from stratus.api.ops import ports as port_ops
from stratus.api.ops import servers as server_ops


def _body(req: Req, port: dict[str, Any]) -> dict[str, Any]:
    body = port_ops.interface(port)
    if req.want.supports("interface_tag"):
        body["tag"] = None
    return body


def list_interfaces(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-attach-interfaces:list")
    found = ops.listed(req.api, req.arg("server_id"), _owner_filter(req))
    return json_response({"interfaceAttachments": [_body(req, p) for p in found]})


def show_interface(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-attach-interfaces:show")
    server = server_ops.get(req.api, req.arg("server_id"), _owner_filter(req))
    port = ops.find(req.api, port_ops.network(req.api), server, req.arg("port_id"))
    return json_response({"interfaceAttachment": _body(req, port)})


def attach_interface(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-attach-interfaces:create")
    data = (req.body(INTERFACE_ATTACH) or {}).get("interfaceAttachment") or {}
    ips = data.get("fixed_ips") or []
    port = ops.attach(req.api, req.arg("server_id"), _owner_filter(req),
                      port_id=data.get("port_id"), network_id=data.get("net_id"),
                      fixed_ip=ips[0]["ip_address"] if ips else None,
                      is_admin=req.is_admin, caller=req.caller)
    return json_response({"interfaceAttachment": _body(req, port)})


def detach_interface(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-attach-interfaces:delete")
    ops.detach(req.api, req.arg("server_id"), _owner_filter(req), req.arg("port_id"),
               req.caller)
    return empty_response(202)
