"""The operator's client: ``stratus service|server|flavor|server-group|aggregate|host ...``.

This module registers every client command (the areas live in ``client_resources``,
``client_moves``, ``client_events``, ``client_network`` and ``client_quotas``; what they
share, the HTTP wrapper, the output and the credentials, is in ``client_base``) and holds
the service and host commands itself.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stratus.api.binaries import api_name, own_name
from stratus.cli import client_network, client_quotas, client_resources
from stratus.cli.client_base import (
    COMPUTE_BINARY,
    HTTP,
    ClientError,
    area,
    connection_options,
    emit,
    is_uuid,
    leaf,
    placement_http,
    table,
)

# ---- services -----------------------------------------------------------------------

def _own(service: dict[str, Any]) -> dict[str, Any]:
    """A service as the compute API shows it, in Stratus's own words: its binary as
    Stratus names it (the API says nova-compute), its time to the second."""
    out = dict(service, binary=own_name(service["binary"]))
    if isinstance(out.get("updated_at"), str):
        out["updated_at"] = out["updated_at"].split(".", 1)[0]
    return out


def _services(api: HTTP, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
    if params and "binary" in params:
        params = dict(params, binary=api_name(params["binary"]))
    return [_own(s) for s in api.call("GET", "/os-services", params=params)["services"]]


def find_service(api: HTTP, ident: str) -> dict[str, Any]:
    """A compute service by uuid or by host name."""
    listed = _services(api)
    found = [s for s in listed if s["id"] == ident] if is_uuid(ident) else \
        [s for s in listed if s["host"] == ident and s["binary"] == COMPUTE_BINARY]
    if not found:
        raise ClientError(f"no compute service with host or id {ident}")
    return dict(found[0])



SERVICE_COLUMNS = ("ID", "Binary", "Host", "Zone", "Status", "State", "Forced Down",
                   "Disabled Reason", "Updated At")
SERVICE_KEYS = ("id", "binary", "host", "zone", "status", "state", "forced_down",
                "disabled_reason", "updated_at")


def _show_services(args: argparse.Namespace, services: list[dict[str, Any]]) -> None:
    emit(args, services, lambda: table(SERVICE_COLUMNS,
                                       [[s[k] for k in SERVICE_KEYS] for s in services]))


def service_list(args: argparse.Namespace, api: HTTP) -> None:
    params = {k: v for k, v in (("host", args.host), ("binary", args.binary)) if v}
    _show_services(args, _services(api, params))


def _service_update(args: argparse.Namespace, api: HTTP, body: dict[str, Any]) -> None:
    svc = find_service(api, args.service)
    updated = api.call("PUT", f"/os-services/{svc['id']}", json_body=body)["service"]
    _show_services(args, [_own(updated)])


def service_disable(args: argparse.Namespace, api: HTTP) -> None:
    body: dict[str, Any] = {"status": "disabled"}
    if args.reason:
        body["disabled_reason"] = args.reason
    _service_update(args, api, body)


def service_enable(args: argparse.Namespace, api: HTTP) -> None:
    _service_update(args, api, {"status": "enabled"})


def service_force_down(args: argparse.Namespace, api: HTTP) -> None:
    _service_update(args, api, {"forced_down": not args.unset})


def service_delete(args: argparse.Namespace, api: HTTP) -> None:
    svc = find_service(api, args.service)
    api.call("DELETE", f"/os-services/{svc['id']}")
    emit(args, {"deleted": svc["id"]},
         lambda: print(f"deleted service {svc['id']} ({svc['binary']} on {svc['host']})"))


# ---- host usage (Placement) -----------------------------------------------------------

USAGE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
# Classes a host's nested providers carry (its NICs), shown when some host has them.
BANDWIDTH = {"NET_BW_EGR_KILOBIT_PER_SEC": "NIC egress",
             "NET_BW_IGR_KILOBIT_PER_SEC": "NIC ingress"}
PACKET_RATE = {"NET_PACKET_RATE_KILOPACKET_PER_SEC": "NIC packet rate",
               "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": "NIC egress packet rate",
               "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": "NIC ingress packet rate"}


def _provider_figures(placement: HTTP, uuid: str) -> tuple[dict[str, int], dict[str, int]]:
    """(capacity, used) per resource class of one provider."""
    inventories = placement.call("GET", f"/resource_providers/{uuid}/inventories")
    usages = placement.call("GET", f"/resource_providers/{uuid}/usages")["usages"]
    capacity = {rc: int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
                for rc, inv in inventories["inventories"].items()}
    return capacity, {rc: int(n) for rc, n in usages.items()}


def usage_label(rc: str) -> str:
    """A column heading: the class, or for a NIC's classes what they measure and in what."""
    if rc in BANDWIDTH:
        return f"{BANDWIDTH[rc]} Gbit/s"
    if rc in PACKET_RATE:
        return f"{PACKET_RATE[rc]} kpps"
    return rc


def usage_cell(rc: str, used: int, capacity: int) -> str:
    """``used/capacity`` in the column's unit (bandwidth in Gbit/s; --json is exact)."""
    if rc in BANDWIDTH:
        return f"{used / 1e6:g}/{capacity / 1e6:g}"
    return f"{used}/{capacity}"


def host_usage(args: argparse.Namespace, api: HTTP) -> None:
    """Per compute host: used/capacity of VCPU, MEMORY_MB, DISK_GB and its NICs'
    bandwidth and packet rate, over its providers (every node's whole tree: NUMA
    children hold VCPU and memory on some hosts, network devices the bandwidth)."""
    placement = placement_http(args)
    try:
        nodes = api.call("GET", "/os-hypervisors/detail")["hypervisors"]
        trees = {n["id"]: placement.call("GET", "/resource_providers",
                                         params={"in_tree": n["id"]})["resource_providers"]
                 for n in nodes}
        providers = [p["uuid"] for tree in trees.values() for p in tree]
        with ThreadPoolExecutor(max_workers=8) as pool:
            figures = dict(zip(providers, pool.map(
                lambda u: _provider_figures(placement, u), providers), strict=True))
    finally:
        placement.close()
    present = {rc for capacity, _ in figures.values() for rc in capacity}
    classes = [*USAGE_CLASSES, *(rc for rc in (*BANDWIDTH, *PACKET_RATE) if rc in present)]
    hosts: dict[str, dict[str, list[int]]] = {}
    for node in nodes:
        host = (node.get("service") or {}).get("host") or node["hypervisor_hostname"]
        books = hosts.setdefault(host, {rc: [0, 0] for rc in classes})
        for provider in trees[node["id"]]:
            capacity, used = figures[provider["uuid"]]
            for rc in classes:
                books[rc][0] += used.get(rc, 0)
                books[rc][1] += capacity.get(rc, 0)
    data: list[dict[str, Any]] = [
        {"host": h, **{rc: {"used": u, "capacity": c} for rc, (u, c) in b.items()}}
        for h, b in sorted(hosts.items())]
    emit(args, data, lambda: table(
        ("Host", *(f"{usage_label(rc)} used/capacity" for rc in classes)),
        [[d["host"], *(usage_cell(rc, d[rc]["used"], d[rc]["capacity"]) for rc in classes)]
         for d in data]))


# ---- the parsers ------------------------------------------------------------------------


def add_commands(sub: Any) -> None:
    conn = [connection_options()]
    services = area(sub, "service", "list, disable, enable, force down or delete services")
    p = leaf(services, "list", service_list, "list services in every cell", conn)
    p.add_argument("--host", help="only this host's services")
    p.add_argument("--binary", help="only this binary (e.g. stratus-compute)")
    p = leaf(services, "disable", service_disable,
             "disable a compute service (no new servers; the compute sets "
             "COMPUTE_STATUS_DISABLED in Placement before this returns)", conn)
    p.add_argument("service", metavar="HOST_OR_ID")
    p.add_argument("--reason", help="why (shown as disabled_reason)")
    p = leaf(services, "enable", service_enable, "enable a compute service", conn)
    p.add_argument("service", metavar="HOST_OR_ID")
    p = leaf(services, "force-down", service_force_down,
             "mark a compute service down now (e.g. before evacuating a dead host)", conn)
    p.add_argument("service", metavar="HOST_OR_ID")
    p.add_argument("--unset", action="store_true", help="clear forced_down instead")
    p = leaf(services, "delete", service_delete,
             "delete a service (a compute's providers leave Placement; refused while it "
             "has servers or allocations)", conn)
    p.add_argument("service", metavar="HOST_OR_ID")

    client_resources.add_commands(sub, conn)
    client_network.add_commands(sub, conn)
    client_quotas.add_commands(sub, conn)

    hosts = area(sub, "host", "compute hosts")
    leaf(hosts, "usage", host_usage, "per host VCPU, MEMORY_MB, DISK_GB and NIC bandwidth "
         "used/capacity, from Placement's inventories and usages", conn)
