"""Hypervisors (compute nodes) and availability zones, read across every cell."""

from __future__ import annotations

from dataclasses import dataclass

from stratus.api.deps import ComputeAPIDeps
from stratus.api.store import aggregates as agg_store
from stratus.api.store import cells as cell_store
from stratus.api.store import hypervisors as store
from stratus.api.store.cells import COMPUTE_BINARY
from stratus.api.store.errors import NotFound
from stratus.api.store.hypervisors import Node
from stratus.cells.services import Service
from stratus.storage import engine as db


def list_nodes(api: ComputeAPIDeps, hostname_pattern: str | None = None) -> list[Node]:
    got = api.dbs.gather(lambda c: api.dbs.read(c, store.nodes))
    out = [n for nodes in got.results.values() for n in nodes]
    if hostname_pattern:
        out = [n for n in out if hostname_pattern in n.hostname]
    return sorted(out, key=lambda n: (n.hostname, n.uuid))


def get_node(api: ComputeAPIDeps, uuid: str) -> Node:
    got = cell_store.gather_strict(api.dbs, lambda c: api.dbs.read(c, store.nodes, uuid=uuid))
    for _cell, nodes in got:
        if nodes:
            return nodes[0]
    raise NotFound(f"Hypervisor {uuid} could not be found.")


@dataclass(frozen=True)
class Zone:
    name: str
    available: bool
    # host -> services there (detail only)
    hosts: dict[str, list[Service]]


def zones(api: ComputeAPIDeps) -> list[Zone]:
    """Every zone with its services: compute hosts by aggregate (default zone when in
    none), other services in the internal zone. A zone is available if one of its
    compute services is enabled and up."""
    listed, _failures = cell_store.list_services(api.dbs)
    with db.read(api.dbs.api) as conn:
        host_zone = agg_store.host_zones(conn)
        named = agg_store.zone_names(conn)
    by_zone: dict[str, dict[str, list[Service]]] = {z: {} for z in named}
    for _cell, svc in listed:
        if svc.binary == COMPUTE_BINARY:
            zone = host_zone.get(svc.host, api.default_az)
        else:
            zone = api.internal_az
        by_zone.setdefault(zone, {}).setdefault(svc.host, []).append(svc)
    out = []
    for name in sorted(by_zone):
        hosts = by_zone[name]
        available = any(not s.disabled and api.is_up(s) for svcs in hosts.values()
                        for s in svcs if s.binary == COMPUTE_BINARY)
        if name == api.internal_az:
            available = True
        out.append(Zone(name, available, hosts))
    return out
