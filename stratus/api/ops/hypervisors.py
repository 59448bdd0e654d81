"""Hypervisors (compute nodes) and availability zones, read across every cell."""

from __future__ import annotations

from dataclasses import dataclass

from stratus.api.deps import ComputeAPIDeps
from stratus.api.store import aggregates as agg_store
from stratus.api.store import cells as cell_store
from stratus.api.store import hypervisors as store
from stratus.api.store import servers as server_store
from stratus.api.store.cells import COMPUTE_BINARY
from stratus.api.store.errors import NotFound
from stratus.api.store.hypervisors import Node
from stratus.api.store.servers import Server
from stratus.cells.mappings import CellMapping
from stratus.cells.services import Service
from stratus.storage import engine as db


def list_nodes(api: ComputeAPIDeps, hostname_pattern: str | None = None) -> list[Node]:
    got = api.dbs.gather(lambda c: api.dbs.read(c, store.nodes))
    out = [n for nodes in got.results.values() for n in nodes]
    if hostname_pattern:
        out = [n for n in out if hostname_pattern in n.hostname]
    return sorted(out, key=lambda n: (n.hostname, n.uuid))


def get_node(api: ComputeAPIDeps, ident: str | int) -> Node:
    """A node by uuid, or by integer id as before 2.53 (ids are per cell: the first
    cell's, as Nova)."""
    if isinstance(ident, int):
        def look(c: CellMapping) -> list[Node]:
            return api.dbs.read(c, store.nodes, node_id=ident)
    else:
        def look(c: CellMapping) -> list[Node]:
            return api.dbs.read(c, store.nodes, uuid=ident)
    for _cell, nodes in cell_store.gather_strict(api.dbs, look):
        if nodes:
            return nodes[0]
    raise NotFound(f"Hypervisor with ID '{ident}' could not be found.")


def servers_on(api: ComputeAPIDeps, hosts: set[str]) -> dict[str, list[Server]]:
    """host -> its live servers, for the hypervisors' ``servers``."""
    out: dict[str, list[Server]] = {h: [] for h in hosts}
    if not hosts:
        return out
    got = api.dbs.gather(lambda c: api.dbs.read(c, server_store.on_hosts, c.uuid,
                                                sorted(hosts)))
    for servers in got.results.values():
        for s in servers:
            out.setdefault(s.host or "", []).append(s)
    return out


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
