"""Simulated hypervisor drivers, chosen by name from an explicit registry.

- :mod:`.base`: the :class:`Driver` interface and shared capacity bookkeeping.
- :mod:`.libvirt`: one node per host; NUMA and network-device children.
- :mod:`.ironic`: one service, many bare-metal nodes.
- :mod:`.faults`: failure injection and hypervisor connection events.
- :mod:`.errors`: typed driver errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stratus.compute.drivers.base import Driver, Instance, Placed
from stratus.compute.drivers.faults import (
    AUTO_DISABLE_PREFIX,
    FaultInjector,
    HypervisorEvent,
    is_auto_disabled,
)
from stratus.compute.drivers.ironic import IronicDriver
from stratus.compute.drivers.libvirt import LibvirtDriver
from stratus.compute.shapes import HostShape, IronicShape, LibvirtShape


def _libvirt(host: str, shape: HostShape, aggregates: Iterable[str]) -> Driver:
    assert isinstance(shape, LibvirtShape)
    return LibvirtDriver(host, shape, aggregates)


def _ironic(host: str, shape: HostShape, aggregates: Iterable[str]) -> Driver:
    assert isinstance(shape, IronicShape)
    return IronicDriver(host, shape, aggregates)


DRIVERS: dict[str, Callable[[str, HostShape, Iterable[str]], Driver]] = {
    "libvirt": _libvirt,
    "ironic": _ironic,
}


def create_driver(host: str, shape: HostShape, aggregates: Iterable[str] = ()) -> Driver:
    """The driver a shape names, for ``host``, with the root providers in ``aggregates``."""
    try:
        factory = DRIVERS[shape.driver]
    except KeyError:
        raise ValueError(f"unknown driver {shape.driver!r} (known: {', '.join(DRIVERS)})"
                         ) from None
    return factory(host, shape, aggregates)


__all__ = [
    "AUTO_DISABLE_PREFIX",
    "DRIVERS",
    "Driver",
    "FaultInjector",
    "HypervisorEvent",
    "Instance",
    "IronicDriver",
    "LibvirtDriver",
    "Placed",
    "create_driver",
    "is_auto_disabled",
]
