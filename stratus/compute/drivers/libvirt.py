"""A libvirt-like driver: one node per host, named after the host.

Tree (Nova's libvirt and Neutron's bandwidth providers, simplified)::

    host1             VCPU, MEMORY_MB, DISK_GB; COMPUTE_NODE + shape traits; aggregates
    ├── host1_NUMA0   VCPU, MEMORY_MB (a share of the host's); HW_NUMA_ROOT  (numa_nodes > 0)
    ├── host1_NUMA1   ...
    └── host1:ens1    NET_BW_EGR_KILOBIT_PER_SEC, NET_BW_IGR_KILOBIT_PER_SEC
                      (NET_PACKET_RATE_KILOPACKET_PER_SEC if the NIC has a rate);
                      CUSTOM_PHYSNET_<PHYSNET>, CUSTOM_VNIC_TYPE_<TYPE>          (per NIC)

A NIC whose packet rate is ``packet_rate_on: agent`` is laid out as Neutron's Open
vSwitch agent reports it: the rate on an agent provider (its vNIC type traits) and
the bandwidth on the NIC below it, so a port's two groups come from two providers of
one subtree::

    ├── host1:ens1:agent   NET_PACKET_RATE_KILOPACKET_PER_SEC; CUSTOM_VNIC_TYPE_<TYPE>
    │   └── host1:ens1     NET_BW_EGR/IGR_KILOBIT_PER_SEC; physnet and vNIC traits

With NUMA cells the root keeps DISK_GB only; VCPU and MEMORY_MB (and their
reserved amounts) are split evenly over the cells, the first cells taking any
remainder. ``max_unit`` is each provider's total: one instance cannot exceed
the provider that holds it.
"""

from __future__ import annotations

from collections.abc import Iterable

import os_traits

from stratus.compute.drivers.base import Driver
from stratus.compute.provider_tree import Provider, ProviderTree, stable_uuid
from stratus.compute.shapes import LibvirtShape, NetworkDevice
from stratus.network.traits import vnic_type_trait
from stratus.placement.model import Inventory

EGRESS, INGRESS = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PACKET_RATE = "NET_PACKET_RATE_KILOPACKET_PER_SEC"


def split(amount: int, parts: int) -> list[int]:
    """``amount`` in ``parts`` near-equal shares, larger shares first."""
    share, extra = divmod(amount, parts)
    return [share + (1 if i < extra else 0) for i in range(parts)]


def _inventory(rc: str, total: int, reserved: int = 0, ratio: float = 1.0) -> Inventory:
    return Inventory(rc, total=total, reserved=reserved, max_unit=total, allocation_ratio=ratio)


def build_tree(host: str, shape: LibvirtShape, aggregates: Iterable[str] = ()) -> ProviderTree:
    root_uuid = stable_uuid("compute-node", host, host)
    ratios = {"VCPU": 1.0, "MEMORY_MB": 1.0, "DISK_GB": 1.0, **shape.allocation_ratios}

    def host_inventory(rc: str, total: int, reserved: int) -> Inventory:
        return _inventory(rc, total, reserved, ratios[rc])

    root_classes = ["DISK_GB"] if shape.numa_nodes else ["VCPU", "MEMORY_MB", "DISK_GB"]
    root = Provider(
        name=host, uuid=root_uuid,
        inventories={rc: host_inventory(rc, shape.total(rc), shape.reserved.get(rc, 0))
                     for rc in root_classes if shape.total(rc) > 0},
        traits=frozenset({os_traits.COMPUTE_NODE, *shape.root_traits}),
        aggregates=frozenset(aggregates),
    )
    providers = [root]
    if shape.numa_nodes:
        cells = shape.numa_nodes
        per_class = {rc: (split(shape.total(rc), cells), split(shape.reserved.get(rc, 0), cells))
                     for rc in ("VCPU", "MEMORY_MB")}
        for i in range(cells):
            name = f"{host}_NUMA{i}"
            providers.append(Provider(
                name=name, uuid=stable_uuid("numa", root_uuid, name), parent_uuid=root_uuid,
                inventories={rc: host_inventory(rc, totals[i], reserved[i])
                             for rc, (totals, reserved) in per_class.items()},
                traits=frozenset({os_traits.HW_NUMA_ROOT}),
            ))
    for device in shape.network_devices:
        providers.extend(_device(host, root_uuid, device))
    return ProviderTree(providers)


def _device(host: str, root_uuid: str, device: NetworkDevice) -> list[Provider]:
    name = f"{host}:{device.name}"
    amounts = {EGRESS: device.egress_kbps, INGRESS: device.ingress_kbps,
               PACKET_RATE: device.packet_rate_kpps}
    out = []
    parent = root_uuid
    if device.packet_rate_on == "agent" and device.packet_rate_kpps > 0:
        agent = f"{name}:agent"
        parent = stable_uuid("net-agent", root_uuid, agent)
        out.append(Provider(
            name=agent, uuid=parent, parent_uuid=root_uuid,
            inventories={PACKET_RATE: _inventory(PACKET_RATE, amounts.pop(PACKET_RATE))},
            traits=frozenset(vnic_type_trait(v) for v in device.vnic_types)))
    out.append(Provider(
        name=name, uuid=stable_uuid("net-device", root_uuid, name), parent_uuid=parent,
        inventories={rc: _inventory(rc, n) for rc, n in amounts.items() if n > 0},
        traits=device.traits,
    ))
    return out


class LibvirtDriver(Driver):
    hypervisor = "libvirt"

    def __init__(self, host: str, shape: LibvirtShape, aggregates: Iterable[str] = ()) -> None:
        super().__init__(host)
        self.shape = shape
        self._set_tree(host, build_tree(host, shape, aggregates))

    @property
    def nodename(self) -> str:
        return self.host
