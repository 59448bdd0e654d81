"""/os-hypervisors and /os-availability-zone: read-only views of compute nodes and zones."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http import render
from stratus.api.http.handlers import require_uuid
from stratus.api.http.wsgi import Req, json_response, timestamp
from stratus.api.ops import hypervisors as ops


def list_hypervisors(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:list")
    nodes = ops.list_nodes(req.api, req.query("hypervisor_hostname_pattern"))
    return json_response({"hypervisors": [render.hypervisor(req, n, False) for n in nodes]})


def list_hypervisors_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:list-detail")
    nodes = ops.list_nodes(req.api, req.query("hypervisor_hostname_pattern"))
    return json_response({"hypervisors": [render.hypervisor(req, n, True) for n in nodes]})


def show_hypervisor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-hypervisors:show")
    node = ops.get_node(req.api, require_uuid(req.arg("hypervisor_id"),
                                              "hypervisor id"))
    return json_response({"hypervisor": render.hypervisor(req, node, True)})


def list_zones(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-availability-zone:list")
    zones = [z for z in ops.zones(req.api) if z.name != req.api.internal_az]
    return json_response({"availabilityZoneInfo": [
        {"zoneName": z.name, "zoneState": {"available": z.available}, "hosts": None}
        for z in zones]})


def list_zones_detail(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-availability-zone:detail")
    out = []
    for z in ops.zones(req.api):
        hosts: dict[str, Any] = {}
        for host, svcs in sorted(z.hosts.items()):
            hosts[host] = {s.binary: {
                "available": req.api.is_up(s), "active": not s.disabled,
                "updated_at": timestamp(max((t for t in (s.updated_at, s.last_seen_up)
                                             if t is not None), default=None))}
                for s in svcs}
        out.append({"zoneName": z.name, "zoneState": {"available": z.available},
                    "hosts": hosts or None})
    return json_response({"availabilityZoneInfo": out})


