"""/os-hosts (until 2.42; 404 from 2.43, as Nova): the hosts of enabled services, one
host's resources, and enabling or disabling a compute host.

A host's ``status`` goes through the compute service (as ``PUT /os-services`` does:
the compute is told, COMPUTE_STATUS_DISABLED follows); maintenance mode and the power
actions (startup, shutdown, reboot) are 501, as on Nova's libvirt driver, which the
simulated hypervisors follow.
"""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.binaries import api_name
from stratus.api.http.errors import HTTPError
from stratus.api.http.wsgi import Req, json_response, validate
from stratus.api.ops import hypervisors as hv_ops
from stratus.api.ops import services as service_ops
from stratus.api.ops.servers import host_zones
from stratus.api.store import cells as cell_store
from stratus.api.store.cells import COMPUTE_BINARY, list_services
from stratus.api.store.errors import NotFound

_NOT_FOUND = "The resource could not be found."
_SWITCH = {"type": "string", "enum": ["enable", "disable", "Enable", "Disable", "ENABLE",
                                       "DISABLE"]}
HOST_UPDATE: dict[str, Any] = {
    "type": "object", "properties": {"status": _SWITCH, "maintenance_mode": _SWITCH},
    "anyOf": [{"required": ["status"]}, {"required": ["maintenance_mode"]}],
    "additionalProperties": False}


def _check_version(req: Req) -> None:
    if req.want.supports("no_os_hosts"):
        raise HTTPError(404, _NOT_FOUND)


def list_hosts(req: Req) -> webob.Response:
    _check_version(req)
    req.authorize("os_compute_api:os-hosts:list")
    listed, _failures = list_services(req.api.dbs)
    zones = host_zones(req.api)
    wanted = req.query("zone") or None
    out = []
    for _cell, svc in listed:
        if svc.disabled:
            continue
        zone = (zones.get(svc.host, req.api.default_az) if svc.binary == COMPUTE_BINARY
                else req.api.internal_az)
        if wanted is not None and zone != wanted:
            continue
        # Nova shows the service's topic: its binary without "nova-".
        out.append({"host_name": svc.host, "zone": zone,
                    "service": api_name(svc.binary).removeprefix("nova-")})
    return json_response({"hosts": out})


def show_host(req: Req) -> webob.Response:
    _check_version(req)
    req.authorize("os_compute_api:os-hosts:show")
    host = req.arg("host_name")
    nodes = [n for n in hv_ops.list_nodes(req.api) if n.host == host]
    if not nodes:
        raise NotFound(f"Compute host {host} could not be found.")
    node = nodes[0]
    servers = hv_ops.servers_on(req.api, {host}).get(host, [])

    def resource(project: str, cpu: int, memory_mb: int, disk_gb: int) -> dict[str, Any]:
        return {"resource": {"host": host, "project": project, "cpu": cpu,
                             "memory_mb": memory_mb, "disk_gb": disk_gb}}

    def used(of: list[Any]) -> tuple[int, int, int]:
        return (sum(int(s.flavor.get("vcpus", 0)) for s in of),
                sum(int(s.flavor.get("memory_mb", 0)) for s in of),
                sum(int(s.flavor.get("root_gb", 0)) + int(s.flavor.get("ephemeral_gb", 0))
                    for s in of))

    out = [resource("(total)", node.vcpus, node.memory_mb, node.local_gb),
           resource("(used_now)", node.vcpus_used, node.memory_mb_used, node.local_gb_used),
           resource("(used_max)", *used(servers))]
    for project in dict.fromkeys(s.project_id for s in servers):
        out.append(resource(project, *used([s for s in servers if s.project_id == project])))
    return json_response({"host": out})


def update_host(req: Req) -> webob.Response:
    _check_version(req)
    req.authorize("os_compute_api:os-hosts:update")
    host = req.arg("host_name")
    body = req.body(None)
    validate(body, HOST_UPDATE)
    cell_store.find_compute(req.api.dbs, host)    # 404 for a host that has no compute
    result: dict[str, Any] = {"host": host}
    if "maintenance_mode" in body:
        raise HTTPError(501, "Maintenance mode is not implemented by this hypervisor.")
    enable = body["status"].lower() == "enable"
    _svc, warnings = service_ops.update_by_host(
        req.api, host, COMPUTE_BINARY, service_ops.Change(disabled=not enable))
    req.warnings.extend(warnings)
    result["status"] = "enabled" if enable else "disabled"
    return json_response(result)


def _power_action(req: Req, action: str) -> webob.Response:
    _check_version(req)
    req.authorize(f"os_compute_api:os-hosts:{action}")
    cell_store.find_compute(req.api.dbs, req.arg("host_name"))
    raise HTTPError(501, f"Host {action} is not implemented by this hypervisor.")


def startup_host(req: Req) -> webob.Response:
    return _power_action(req, "start")


def shutdown_host(req: Req) -> webob.Response:
    return _power_action(req, "shutdown")


def reboot_host(req: Req) -> webob.Response:
    return _power_action(req, "reboot")
