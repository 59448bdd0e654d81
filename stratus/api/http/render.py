"""Response bodies, per microversion feature, in one place."""

from __future__ import annotations

import hashlib
from typing import Any

from stratus.api import status as server_status
from stratus.api.http.wsgi import Req, timestamp, timestamp_z
from stratus.api.store.aggregates import Aggregate
from stratus.api.store.flavors import Flavor
from stratus.api.store.hypervisors import Node
from stratus.api.store.server_groups import ServerGroup
from stratus.api.store.servers import Server
from stratus.cells.services import Service


def status(s: Server) -> str:
    """The API status of a server: its vm_state, or the task it is in the middle of."""
    return server_status.status(s.vm_state, s.task_state)


def service(req: Req, svc: Service, zone: str) -> dict[str, Any]:
    updated = max((t for t in (svc.updated_at, svc.last_seen_up) if t is not None),
                  default=None)
    return {"id": svc.uuid, "binary": svc.binary, "host": svc.host, "zone": zone,
            "status": "disabled" if svc.disabled else "enabled",
            "state": "up" if req.api.is_up(svc) else "down",
            "updated_at": timestamp(updated), "disabled_reason": svc.disabled_reason,
            "forced_down": svc.forced_down}


def flavor(req: Req, f: Flavor, detail: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"id": f.flavorid, "name": f.name,
                            "links": req.link(f"/flavors/{f.flavorid}")}
    if req.want.supports("flavor_description"):
        body["description"] = f.description
    if not detail:
        return body
    swap: int | str = f.swap
    if not f.swap and not req.want.supports("flavor_swap_zero"):
        swap = ""
    body.update({"ram": f.memory_mb, "disk": f.root_gb, "vcpus": f.vcpus, "swap": swap,
                 "OS-FLV-EXT-DATA:ephemeral": f.ephemeral_gb,
                 "OS-FLV-DISABLED:disabled": False,
                 "os-flavor-access:is_public": f.is_public, "rxtx_factor": 1.0})
    if req.want.supports("flavor_extra_specs"):
        body["extra_specs"] = dict(f.extra_specs)
    return body


def server_group(req: Req, g: ServerGroup) -> dict[str, Any]:
    body: dict[str, Any] = {"id": g.uuid, "name": g.name}
    if req.want.supports("server_group_policy"):
        body["policy"] = g.policy
        body["rules"] = ({"max_server_per_host": g.max_server_per_host}
                         if g.max_server_per_host else {})
    else:
        body["policies"] = [g.policy]
        body["metadata"] = {}
    body.update({"members": list(g.members), "project_id": g.project_id,
                 "user_id": g.user_id})
    return body


def _server_flavor(flavor: dict[str, Any]) -> dict[str, Any]:
    return {"original_name": flavor.get("name"), "vcpus": flavor.get("vcpus"),
            "ram": flavor.get("memory_mb"), "disk": flavor.get("root_gb"),
            "ephemeral": flavor.get("ephemeral_gb", 0), "swap": flavor.get("swap_mb", 0),
            "extra_specs": dict(flavor.get("extra_specs") or {})}


def server_brief(req: Req, s: Server) -> dict[str, Any]:
    return {"id": s.uuid, "name": s.name, "links": req.link(f"/servers/{s.uuid}")}


def server(req: Req, s: Server, zone: str | None,
           groups: list[str] | None = None) -> dict[str, Any]:
    shown = status(s)
    host_id = (hashlib.sha224((s.project_id + s.host).encode()).hexdigest()
               if s.host else "")
    body: dict[str, Any] = {
        "id": s.uuid, "name": s.name, "status": shown, "tenant_id": s.project_id,
        "user_id": s.user_id, "metadata": {}, "hostId": host_id,
        "image": {"id": s.image_ref, "links": req.link(f"/images/{s.image_ref}")[1:]}
        if s.image_ref else "",
        "flavor": _server_flavor(s.flavor), "created": timestamp_z(s.created_at),
        "updated": timestamp_z(s.updated_at or s.created_at), "addresses": {},
        "accessIPv4": "", "accessIPv6": "", "links": req.link(f"/servers/{s.uuid}"),
        "OS-DCF:diskConfig": "MANUAL", "progress": 0,
        "OS-EXT-AZ:availability_zone": zone or "", "config_drive": "", "key_name": s.key_name,
        "OS-SRV-USG:launched_at": timestamp(s.launched_at), "OS-SRV-USG:terminated_at": None,
        "OS-EXT-STS:task_state": s.task_state, "OS-EXT-STS:vm_state": s.vm_state,
        "OS-EXT-STS:power_state": s.power_state, "os-extended-volumes:volumes_attached": [],
        "locked": False, "description": None, "tags": [], "trusted_image_certificates": None,
    }
    if req.is_admin:
        body.update({"OS-EXT-SRV-ATTR:host": s.host,
                     "OS-EXT-SRV-ATTR:hypervisor_hostname": s.node,
                     "OS-EXT-SRV-ATTR:instance_name": f"instance-{s.uuid[:8]}"})
    if shown == "ERROR" and s.fault:
        body["fault"] = {"code": 500, "message": s.fault,
                         "created": timestamp_z(s.updated_at or s.created_at)}
        if req.is_admin:   # Nova's "details" (a traceback there; none is kept here)
            body["fault"]["details"] = s.fault
    if groups is not None and req.want.supports("server_groups_in_server"):
        body["server_groups"] = groups
    return body


def aggregate(req: Req, a: Aggregate) -> dict[str, Any]:
    return {"id": a.id, "uuid": a.uuid, "name": a.name,
            "availability_zone": a.availability_zone, "hosts": list(a.hosts),
            "metadata": dict(a.metadata), "created_at": timestamp(a.created_at),
            "updated_at": timestamp(a.updated_at), "deleted": False, "deleted_at": None}


def hypervisor(req: Req, n: Node, detail: bool) -> dict[str, Any]:
    svc = n.service
    body: dict[str, Any] = {
        "id": n.uuid, "hypervisor_hostname": n.hostname,
        "state": "up" if svc is not None and req.api.is_up(svc) else "down",
        "status": "disabled" if svc is None or svc.disabled else "enabled",
    }
    if not detail:
        return body
    body.update({"hypervisor_type": n.hypervisor_type, "hypervisor_version": 1000,
                 "host_ip": None,
                 "service": {"host": n.host, "id": svc.uuid if svc else None,
                             "disabled_reason": svc.disabled_reason if svc else None}})
    if not req.want.supports("hypervisor_no_stats"):
        body.update({"vcpus": n.vcpus, "memory_mb": n.memory_mb, "local_gb": n.local_gb,
                     "vcpus_used": n.vcpus_used, "memory_mb_used": n.memory_mb_used,
                     "local_gb_used": n.local_gb_used,
                     "free_ram_mb": n.memory_mb - n.memory_mb_used,
                     "free_disk_gb": n.local_gb - n.local_gb_used, "current_workload": 0,
                     "running_vms": n.running_vms, "disk_available_least": None,
                     "cpu_info": "{}"})
    else:
        body["uptime"] = None
    return body
