"""os-hypervisors bodies, per version: integer ids before 2.53 (uuids from it);
``cpu_info`` a JSON string before 2.28 and an object from it; the statistics fields
until 2.87, ``uptime`` in the detail from 2.88; ``servers`` when asked for (always,
even empty, from 2.75)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from stratus.api.http.wsgi import Req
from stratus.api.store.hypervisors import Node
from stratus.api.store.servers import Server

# The simulated hypervisors' version (libvirt's encoding of 8.0.0).
HYPERVISOR_VERSION = 8000000


def node_id(req: Req, n: Node) -> int | str:
    return n.uuid if req.want.supports("uuid_ids") else n.id


def cpu_info(n: Node) -> dict[str, Any]:
    """What the simulated driver says of its CPUs: no vendor, model or flags to report,
    only the topology."""
    return {"topology": {"cells": 1, "sockets": 1, "cores": n.vcpus, "threads": 1},
            "features": []}


def host_ip(n: Node) -> str:
    """A simulated host has no address of its own: one from the documentation range
    (RFC 5737), stable per node."""
    return f"192.0.2.{n.id % 254 + 1}"


def uptime(n: Node, now: dt.datetime) -> str:
    """The host's uptime as ``uptime(1)`` prints it, from when its service started."""
    since = n.service.created_at if n.service is not None else now
    up = max(now - since, dt.timedelta(0))
    days, rest = divmod(int(up.total_seconds()), 86400)
    hours, minutes = rest // 3600, rest % 3600 // 60
    return (f" {now:%H:%M:%S} up {days} days, {hours:2d}:{minutes:02d},  0 users,  "
            "load average: 0.00, 0.00, 0.00")


def hypervisor(req: Req, n: Node, detail: bool, servers: list[Server] | None = None,
               with_servers: bool = False) -> dict[str, Any]:
    svc = n.service
    body: dict[str, Any] = {
        "id": node_id(req, n), "hypervisor_hostname": n.hostname,
        "state": "up" if svc is not None and req.api.is_up(svc) else "down",
        "status": "disabled" if svc is None or svc.disabled else "enabled",
    }
    if detail:
        body.update({"hypervisor_type": n.hypervisor_type,
                     "hypervisor_version": HYPERVISOR_VERSION, "host_ip": host_ip(n),
                     "service": {"host": n.host,
                                 "id": (svc.uuid if req.want.supports("uuid_ids")
                                        else svc.id) if svc else None,
                                 "disabled_reason": svc.disabled_reason if svc else None}})
        if req.want.supports("hypervisor_no_stats"):
            body["uptime"] = (uptime(n, req.api.clock())
                              if svc is not None and req.api.is_up(svc) else None)
        else:
            body.update(statistics([n]))
            body.pop("count")
            info = cpu_info(n)
            body["cpu_info"] = info if req.want.supports("cpu_info_object") \
                else json.dumps(info)
    if servers:
        body["servers"] = [{"name": s.name, "uuid": s.uuid} for s in servers]
    elif with_servers and req.want.supports("hypervisor_servers_always"):
        body["servers"] = []
    return body


def statistics(nodes: list[Node]) -> dict[str, int]:
    """The totals of ``GET /os-hypervisors/statistics`` (before 2.88)."""
    return {"count": len(nodes), "vcpus": sum(n.vcpus for n in nodes),
            "memory_mb": sum(n.memory_mb for n in nodes),
            "local_gb": sum(n.local_gb for n in nodes),
            "vcpus_used": sum(n.vcpus_used for n in nodes),
            "memory_mb_used": sum(n.memory_mb_used for n in nodes),
            "local_gb_used": sum(n.local_gb_used for n in nodes),
            "free_ram_mb": sum(n.memory_mb - n.memory_mb_used for n in nodes),
            "free_disk_gb": sum(n.local_gb - n.local_gb_used for n in nodes),
            "current_workload": 0, "running_vms": sum(n.running_vms for n in nodes),
            "disk_available_least": sum(n.local_gb - n.local_gb_used for n in nodes)}
