"""A server as ``GET /servers[/detail]`` and ``GET /servers/{id}`` show it, per version.

``server(req, s, zone, groups, extras)`` is Nova's detailed view (show, detail, and the
update and rebuild answers); ``server_brief`` the list entry. What the body shows beyond
the ``Server`` record comes in :class:`Extras`, gathered once per page by the handler.

By version: 2.1 every caller sees the OS-EXT-STS, OS-EXT-AZ, OS-SRV-USG attributes and
``os-extended-volumes``; admins OS-EXT-SRV-ATTR host/instance_name/hypervisor_hostname
(2.3 adds hostname, kernel_id, launch_index, ramdisk_id, reservation_id,
root_device_name, user_data). 2.9 ``locked``, 2.16 ``host_status`` (admins), 2.19
``description``, 2.26 ``tags``, 2.47 the flavor itself instead of its id and links,
2.63 ``trusted_image_certificates``, 2.71 ``server_groups`` (show only), 2.73
``locked_reason``, 2.90 OS-EXT-SRV-ATTR:hostname for every caller.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from stratus.api import status as server_status
from stratus.api.http.wsgi import Req, timestamp_z
from stratus.api.store.servers import Server

# Nova shows ``progress`` in these statuses only, and ``fault`` in these.
PROGRESS_STATUSES = frozenset({"ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE",
                               "MIGRATING"})
FAULT_STATUSES = frozenset({"ERROR", "DELETED"})
# host_status values (Nova's HostStatus); "" when the server has no host.
HOST_UP, HOST_DOWN, HOST_MAINTENANCE, HOST_UNKNOWN = "UP", "DOWN", "MAINTENANCE", "UNKNOWN"


def status(s: Server) -> str:
    """The API status of a server: its vm_state, or the task it is in the middle of."""
    if s.deleted_at is not None:
        return "DELETED"
    return server_status.status(s.vm_state, s.task_state)


@dataclass
class Extras:
    """What a server's body shows that its record does not hold."""

    addresses: dict[str, Any] = field(default_factory=dict)
    security_groups: list[str] = field(default_factory=list)   # names; none: no key
    host_status: str | None = None      # None: not shown (not an admin, or before 2.16)
    flavor_id: str | None = None        # for servers recorded before flavors kept theirs


def hostname_of(s: Server) -> str:
    """The server's hostname: the one it was given, or Nova's default, its name made a
    hostname (sanitize_hostname), or ``Server-<uuid>`` when nothing of the name is left."""
    if s.hostname:
        return s.hostname
    text = s.name.encode("latin-1", "ignore").decode("latin-1")[:63]
    text = re.sub(r"[ _.]", "-", text)
    text = re.sub(r"[^\w.-]+", "", text)
    text = text.lower().strip(".-")
    return text or f"Server-{s.uuid}"[:63]


def host_id(s: Server) -> str:
    if not s.host:
        return ""
    return hashlib.sha224((s.project_id + s.host).encode()).hexdigest()


def _usage_time(when: dt.datetime | None) -> str | None:
    # Nova prints these two with str(datetime) through its JSON encoder: microseconds.
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") if when else None


def _bookmark(req: Req, path: str) -> list[dict[str, str]]:
    return [link for link in req.link(path) if link["rel"] == "bookmark"]


def _flavor(req: Req, s: Server, extras: Extras | None) -> dict[str, Any]:
    f = s.flavor
    if not f:
        return {}
    if not req.want.supports("server_flavor_dict"):
        flavor_id = str(f.get("flavorid") or (extras.flavor_id if extras else "") or "")
        return {"id": flavor_id, "links": _bookmark(req, f"/flavors/{flavor_id}")}
    return {"vcpus": f.get("vcpus"), "ram": f.get("memory_mb"), "disk": f.get("root_gb"),
            "ephemeral": f.get("ephemeral_gb", 0), "swap": f.get("swap_mb", 0),
            "original_name": f.get("name"), "extra_specs": dict(f.get("extra_specs") or {})}


def _image(req: Req, s: Server) -> dict[str, Any] | str:
    if not s.image_ref:
        return ""
    return {"id": s.image_ref, "links": _bookmark(req, f"/images/{s.image_ref}")}


def server_brief(req: Req, s: Server) -> dict[str, Any]:
    return {"id": s.uuid, "name": s.name, "links": req.link(f"/servers/{s.uuid}")}


def server(req: Req, s: Server, zone: str | None, groups: list[str] | None = None,
           extras: Extras | None = None) -> dict[str, Any]:
    """Nova's detailed view. ``groups`` (the server's group, if any) is shown from 2.71
    where Nova shows it (show, update, rebuild: pass None for the detail list)."""
    shown = status(s)
    want = req.want
    body: dict[str, Any] = {
        "id": s.uuid, "name": s.name, "status": shown, "tenant_id": s.project_id,
        "user_id": s.user_id, "metadata": dict(s.metadata), "hostId": host_id(s),
        "image": _image(req, s), "flavor": _flavor(req, s, extras),
        "created": timestamp_z(s.created_at),
        "updated": timestamp_z(s.updated_at or s.created_at),
        "addresses": extras.addresses if extras else {},
        "accessIPv4": s.access_ip_v4 or "", "accessIPv6": s.access_ip_v6 or "",
        "links": req.link(f"/servers/{s.uuid}"), "OS-DCF:diskConfig": "MANUAL",
        "OS-EXT-AZ:availability_zone": zone or "", "config_drive": s.config_drive,
        "key_name": s.key_name,
        "OS-SRV-USG:launched_at": _usage_time(s.launched_at),
        "OS-SRV-USG:terminated_at": _usage_time(s.deleted_at),
        "OS-EXT-STS:task_state": s.task_state, "OS-EXT-STS:vm_state": s.vm_state,
        "OS-EXT-STS:power_state": s.power_state,
        "os-extended-volumes:volumes_attached": [],
    }
    if shown in PROGRESS_STATUSES:
        body["progress"] = s.progress
    if shown in FAULT_STATUSES and s.fault:
        body["fault"] = {"code": 500, "message": s.fault,
                         "created": timestamp_z(s.updated_at or s.created_at)}
        if req.is_admin:   # Nova's "details" (a traceback there; none is kept here)
            body["fault"]["details"] = s.fault
    if extras and extras.security_groups:
        body["security_groups"] = [{"name": n} for n in extras.security_groups]
    hostname = hostname_of(s)
    if req.is_admin:
        body.update({"OS-EXT-SRV-ATTR:host": s.host,
                     "OS-EXT-SRV-ATTR:hypervisor_hostname": s.node,
                     "OS-EXT-SRV-ATTR:instance_name": f"instance-{s.uuid[:8]}"})
        if want.supports("server_extended_attrs"):
            body.update({"OS-EXT-SRV-ATTR:hostname": hostname,
                         "OS-EXT-SRV-ATTR:kernel_id": "",
                         "OS-EXT-SRV-ATTR:launch_index": s.launch_index,
                         "OS-EXT-SRV-ATTR:ramdisk_id": "",
                         "OS-EXT-SRV-ATTR:reservation_id": s.reservation_id or "",
                         "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                         "OS-EXT-SRV-ATTR:user_data": s.user_data})
    elif want.supports("server_hostname"):
        body["OS-EXT-SRV-ATTR:hostname"] = hostname
    if want.supports("server_locked"):
        body["locked"] = s.locked_by is not None
    if want.supports("server_host_status") and extras and extras.host_status is not None:
        body["host_status"] = extras.host_status
    if want.supports("server_description"):
        body["description"] = s.description
    if want.supports("server_tags"):
        body["tags"] = list(s.tags)
    if want.supports("trusted_certs"):
        body["trusted_image_certificates"] = \
            list(s.trusted_certs) if s.trusted_certs is not None else None
    if groups is not None and want.supports("server_groups_in_server"):
        body["server_groups"] = groups
    if want.supports("locked_reason"):
        body["locked_reason"] = s.locked_reason
    return body
