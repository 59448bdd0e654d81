"""The networks ``stratus serve`` seeds: one shared flat provider network per physical
network the simulated hosts' NICs are on, each with a subnet, so a server can be booted
with a port (and a bandwidth guarantee) on a fresh start; and an external network
``public`` with a subnet (172.24.4.0/24, as DevStack's), for routers' gateways and
floating IPs.

Idempotent: a physnet that already has a network, or a cloud that has an external
network (the operator's, or an earlier start's), is left alone.
"""

from __future__ import annotations

from stratus.compute.fleet import Fleet
from stratus.compute.shapes import LibvirtShape
from stratus.network.client import NetworkClient

PUBLIC, PUBLIC_CIDR = "public", "172.24.4.0/24"


def physnets(fleet: Fleet) -> list[str]:
    found: set[str] = set()
    for host in fleet.hosts:
        if isinstance(host.shape, LibvirtShape):
            found.update(d.physnet for d in host.shape.network_devices)
    return sorted(found)


def seed_provider_networks(network: NetworkClient, fleet: Fleet) -> list[str]:
    """Networks made now (names)."""
    made = []
    for i, physnet in enumerate(physnets(fleet)):
        if network.list_networks(**{"provider:physical_network": physnet}):
            continue
        net = network.create_network(**{
            "name": physnet, "shared": True, "provider:network_type": "flat",
            "provider:physical_network": physnet})
        network.create_subnet(network_id=net["id"], ip_version=4,
                              cidr=f"10.{(100 + i) % 256}.0.0/16", name=f"{physnet}-subnet")
        made.append(physnet)
    if not network.list_networks(**{"router:external": "true"}):
        net = network.create_network(**{"name": PUBLIC, "router:external": True})
        network.create_subnet(network_id=net["id"], ip_version=4, cidr=PUBLIC_CIDR,
                              name=f"{PUBLIC}-subnet", enable_dhcp=False)
        made.append(PUBLIC)
    return made
