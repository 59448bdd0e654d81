"""Host shapes: what one simulated compute host is made of, as plain frozen data.

A shape names its driver (``libvirt`` or ``ironic``); the fleet file
(:mod:`stratus.compute.fleet`) gives many hosts a shape. Shapes validate
themselves on construction, so a driver can trust what it is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import os_resource_classes
import os_traits

from stratus.network.traits import physnet_trait, vnic_type_trait

STANDARD_TRAITS = frozenset(os_traits.get_traits())
CUSTOM_NAME = re.compile(r"CUSTOM_[A-Z0-9_]+")
VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical",
              "virtio-forwarder", "smart-nic", "remote-managed", "vdpa")
HOST_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
# What libvirt hosts report as they do in Nova: the images they can boot from.
LIBVIRT_IMAGE_TYPES = frozenset({"COMPUTE_IMAGE_TYPE_AKI", "COMPUTE_IMAGE_TYPE_AMI",
                                 "COMPUTE_IMAGE_TYPE_ARI", "COMPUTE_IMAGE_TYPE_ISO",
                                 "COMPUTE_IMAGE_TYPE_QCOW2", "COMPUTE_IMAGE_TYPE_RAW"})


def arch_trait(arch: str) -> str:
    """The os-traits name of a CPU architecture (``x86_64`` -> ``HW_ARCH_X86_64``)."""
    return "HW_ARCH_" + arch.upper()


class ShapeError(ValueError):
    """A shape that cannot describe a real host; the message says which field and why."""


def check_trait(name: str, where: str) -> str:
    if name not in STANDARD_TRAITS and not CUSTOM_NAME.fullmatch(name):
        raise ShapeError(f"{where}: {name!r} is neither a standard trait nor CUSTOM_[A-Z0-9_]+")
    return name


@dataclass(frozen=True)
class NetworkDevice:
    """A physical NIC: a child provider with bandwidth (and optionally packet-rate)
    inventory, its physnet's and vNIC types' traits, the names ports ask for."""

    name: str
    physnet: str
    vnic_types: tuple[str, ...] = ("normal",)
    egress_kbps: int = 0
    ingress_kbps: int = 0
    packet_rate_kpps: int = 0   # NET_PACKET_RATE_KILOPACKET_PER_SEC, either direction
    # Where the packet rate is: on the device itself, or (Neutron's Open vSwitch agent
    # layout) on an agent provider between the host and the device, which then holds
    # only the bandwidth.
    packet_rate_on: str = "device"

    def __post_init__(self) -> None:
        where = f"network device {self.name!r}"
        if not self.name or not self.physnet:
            raise ShapeError(f"{where}: needs a name and a physnet")
        unknown = [v for v in self.vnic_types if v not in VNIC_TYPES]
        if unknown or not self.vnic_types:
            raise ShapeError(f"{where}: vnic_types must be some of {', '.join(VNIC_TYPES)}")
        if self.egress_kbps < 0 or self.ingress_kbps < 0 or self.packet_rate_kpps < 0:
            raise ShapeError(f"{where}: bandwidth and packet rate cannot be negative")
        if self.packet_rate_on not in ("device", "agent"):
            raise ShapeError(f"{where}: packet_rate_on must be 'device' or 'agent'")

    @property
    def traits(self) -> frozenset[str]:
        return frozenset({physnet_trait(self.physnet),
                          *(vnic_type_trait(v) for v in self.vnic_types)})


@dataclass(frozen=True)
class LibvirtShape:
    """A hypervisor host: VCPU, MEMORY_MB, DISK_GB; optionally NUMA cells and NICs as children."""

    driver: ClassVar[str] = "libvirt"
    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int = 0
    reserved: Mapping[str, int] = field(default_factory=dict)
    allocation_ratios: Mapping[str, float] = field(default_factory=dict)
    numa_nodes: int = 0  # 0: VCPU and MEMORY_MB on the root; N: split over N child cells
    network_devices: tuple[NetworkDevice, ...] = ()
    traits: frozenset[str] = frozenset()
    # The CPU architecture (HW_ARCH_* trait; images ask for it with hw_architecture).
    arch: str = "x86_64"

    def __post_init__(self) -> None:
        where = f"shape {self.name!r}"
        if arch_trait(self.arch) not in STANDARD_TRAITS:
            raise ShapeError(f"{where}: unknown arch {self.arch!r} (e.g. x86_64, aarch64, "
                             "ppc64le, s390x)")
        if self.vcpus < 1 or self.memory_mb < 1 or self.disk_gb < 0:
            raise ShapeError(f"{where}: needs vcpus >= 1, memory_mb >= 1 and disk_gb >= 0")
        for rc, amount in self.reserved.items():
            if rc not in HOST_CLASSES:
                raise ShapeError(f"{where}: reserved: unknown class {rc!r} "
                                 f"(one of {', '.join(HOST_CLASSES)})")
            if amount < 0 or (amount > 0 and amount >= self.total(rc)):
                raise ShapeError(f"{where}: reserved {rc} must be >= 0 and below the total "
                                 f"({self.total(rc)})")
        for rc, ratio in self.allocation_ratios.items():
            if rc not in HOST_CLASSES or not ratio > 0:
                raise ShapeError(f"{where}: allocation_ratios: {rc} must be one of "
                                 f"{', '.join(HOST_CLASSES)} with a ratio > 0")
        if not 0 <= self.numa_nodes <= self.vcpus or self.numa_nodes > self.memory_mb:
            raise ShapeError(f"{where}: numa_nodes must be between 0 and the number of vcpus")
        names = [d.name for d in self.network_devices]
        if len(set(names)) != len(names):
            raise ShapeError(f"{where}: network device names must be unique")
        for trait in self.traits:
            check_trait(trait, f"{where}: traits")

    @property
    def root_traits(self) -> frozenset[str]:
        """The root provider's traits: the shape's, its architecture's, the image types."""
        return frozenset({*self.traits, arch_trait(self.arch), *LIBVIRT_IMAGE_TYPES})

    def total(self, resource_class: str) -> int:
        return {"VCPU": self.vcpus, "MEMORY_MB": self.memory_mb,
                "DISK_GB": self.disk_gb}[resource_class]


@dataclass(frozen=True)
class BaremetalNodes:
    """``count`` identical bare-metal nodes of one resource class."""

    count: int
    resource_class: str  # "baremetal-gold" or "CUSTOM_BAREMETAL_GOLD"
    traits: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ShapeError("a bare-metal node group needs count >= 1")
        if not self.resource_class:
            raise ShapeError("a bare-metal node group needs a resource_class")
        for trait in self.traits:
            check_trait(trait, f"bare-metal nodes {self.resource_class!r}: traits")

    @property
    def custom_class(self) -> str:
        """Ironic's rule: the node's class, upper-cased and prefixed, as Placement knows it."""
        name = self.resource_class
        if name.startswith("CUSTOM_") and CUSTOM_NAME.fullmatch(name):
            return name
        return str(os_resource_classes.normalize_name(name))


@dataclass(frozen=True)
class IronicShape:
    """One compute service managing many bare-metal nodes, each node its own provider."""

    driver: ClassVar[str] = "ironic"
    name: str
    nodes: tuple[BaremetalNodes, ...]

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ShapeError(f"shape {self.name!r}: an ironic shape needs node groups")


HostShape = LibvirtShape | IronicShape
