"""A fleet: which simulated hosts exist, their shapes, cells, availability zones, aggregates.

``stratus serve --fleet FILE`` reads one of these (YAML, or JSON for ``.json``)::

    shapes:
      standard:
        driver: libvirt            # the default
        vcpus: 32
        memory_mb: 131072
        disk_gb: 1000
        reserved: {MEMORY_MB: 512}
        allocation_ratios: {VCPU: 4.0, MEMORY_MB: 1.0}
        numa_nodes: 2              # optional: VCPU and MEMORY_MB move to 2 NUMA children
        network_devices:           # optional: bandwidth children
          - {name: ens1, physnet: physnet1, vnic_types: [normal, direct],
             egress_kbps: 10000000, ingress_kbps: 10000000,
             packet_rate_kpps: 1000,     # optional
             packet_rate_on: agent}      # optional: Neutron's OVS layout (below)
        traits: [HW_CPU_X86_AVX2]
      metal:
        driver: ironic
        nodes:
          - {count: 4, resource_class: baremetal-gold, traits: [CUSTOM_RAID5]}
    hosts:
      - {count: 100, shape: standard, name: "cmp{n:04d}", availability_zone: az1,
         aggregates: [ssd], cell: cell1}
      - {count: 2, shape: metal}   # names default to "<shape>-<n>", numbered on across groups

Every unknown key, wrong type or impossible value is a :class:`FleetError`
naming where it is (``hosts[1].shape: unknown shape 'bigg'``). Aggregates get
UUIDs derived from their names (:func:`aggregate_uuid`); an availability zone
is an aggregate of the same name whose metadata names the zone, as in Nova.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stratus.compute import drivers
from stratus.compute.provider_tree import stable_uuid
from stratus.compute.shapes import (
    BaremetalNodes,
    HostShape,
    IronicShape,
    LibvirtShape,
    NetworkDevice,
    ShapeError,
)

HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
DEFAULT_CELL = "cell1"


class FleetError(ValueError):
    """A fleet description that cannot be used; the message says where and why."""


def aggregate_uuid(name: str) -> str:
    return stable_uuid("aggregate", name)


@dataclass(frozen=True)
class HostSpec:
    name: str
    shape: HostShape
    cell: str = DEFAULT_CELL
    availability_zone: str | None = None
    aggregates: tuple[str, ...] = ()

    @property
    def aggregate_names(self) -> tuple[str, ...]:
        """Named aggregates plus the availability zone's own aggregate."""
        names = list(self.aggregates)
        if self.availability_zone and self.availability_zone not in names:
            names.append(self.availability_zone)
        return tuple(names)

    @property
    def aggregate_uuids(self) -> tuple[str, ...]:
        return tuple(aggregate_uuid(n) for n in self.aggregate_names)

    def create_driver(self) -> drivers.Driver:
        return drivers.create_driver(self.name, self.shape, self.aggregate_uuids)


@dataclass(frozen=True)
class AggregateSpec:
    name: str
    uuid: str
    availability_zone: str | None
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class Fleet:
    shapes: Mapping[str, HostShape]
    hosts: tuple[HostSpec, ...]

    def host(self, name: str) -> HostSpec:
        for spec in self.hosts:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def cells(self) -> list[str]:
        return sorted({h.cell for h in self.hosts})

    @property
    def availability_zones(self) -> list[str]:
        return sorted({h.availability_zone for h in self.hosts if h.availability_zone})

    def aggregates(self) -> list[AggregateSpec]:
        members: dict[str, list[str]] = {}
        zones = set(self.availability_zones)
        for spec in self.hosts:
            for name in spec.aggregate_names:
                members.setdefault(name, []).append(spec.name)
        return [AggregateSpec(name, aggregate_uuid(name), name if name in zones else None,
                              tuple(hosts)) for name, hosts in sorted(members.items())]


def load_fleet(path: str | Path) -> Fleet:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FleetError(f"cannot read fleet file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise FleetError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                         f"{exc}") from None
    return parse_fleet(data, str(path))


def parse_fleet(data: Any, source: str = "fleet") -> Fleet:
    top = _mapping(data, source, required={"shapes", "hosts"})
    shapes_data = _mapping(top["shapes"], f"{source}: shapes")
    if not shapes_data:
        raise FleetError(f"{source}: shapes: define at least one shape")
    shapes = {str(name): _shape(str(name), spec, f"{source}: shapes.{name}")
              for name, spec in shapes_data.items()}
    groups = top["hosts"]
    if not isinstance(groups, list) or not groups:
        raise FleetError(f"{source}: hosts: expected a non-empty list of host groups")
    hosts: list[HostSpec] = []
    next_index: dict[str, int] = {}
    for i, group in enumerate(groups):
        hosts.extend(_hosts(group, shapes, next_index, f"{source}: hosts[{i}]"))
    seen: set[str] = set()
    for spec in hosts:
        if spec.name in seen:
            raise FleetError(f"{source}: host name {spec.name!r} is used twice (give groups "
                             "distinct 'name' patterns with {n})")
        seen.add(spec.name)
    return Fleet(shapes, tuple(hosts))


# -- parsing helpers --------------------------------------------------------------


def _mapping(value: Any, where: str, required: Iterable[str] = (),
             optional: Iterable[str] | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise FleetError(f"{where}: expected a mapping")
    required = set(required)
    missing = sorted(required - set(value))
    if missing:
        raise FleetError(f"{where}: missing {', '.join(missing)}")
    if optional is not None:
        unknown = sorted(set(value) - required - set(optional))
        if unknown:
            raise FleetError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    elif required:
        unknown = sorted(set(value) - required)
        if unknown:
            raise FleetError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    return value


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise FleetError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise FleetError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise FleetError(f"{where}: expected a list of strings")
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(value))


def _numbers(value: Any, where: str, kind: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rc, number in _mapping(value, where).items():
        ok = isinstance(number, (int, float) if kind is float else int)
        if not ok or isinstance(number, bool):
            raise FleetError(f"{where}.{rc}: expected a number, got {number!r}")
        out[str(rc)] = kind(number)
    return out


LIBVIRT_KEYS = {"driver", "disk_gb", "reserved", "allocation_ratios", "numa_nodes",
                "network_devices", "traits", "arch"}
DEVICE_KEYS = {"vnic_types", "egress_kbps", "ingress_kbps", "packet_rate_kpps",
               "packet_rate_on"}


def _shape(name: str, data: Any, where: str) -> HostShape:
    driver = data.get("driver", "libvirt") if isinstance(data, Mapping) else None
    try:
        if driver == "ironic":
            spec = _mapping(data, where, required={"driver", "nodes"})
            groups = spec["nodes"]
            if not isinstance(groups, list) or not groups:
                raise FleetError(f"{where}.nodes: expected a non-empty list of node groups")
            return IronicShape(name, tuple(_node_group(g, f"{where}.nodes[{i}]")
                                           for i, g in enumerate(groups)))
        if driver == "libvirt":
            spec = _mapping(data, where, required={"vcpus", "memory_mb"}, optional=LIBVIRT_KEYS)
            devices = spec.get("network_devices", [])
            if not isinstance(devices, list):
                raise FleetError(f"{where}.network_devices: expected a list")
            return LibvirtShape(
                name=name,
                vcpus=_int(spec["vcpus"], f"{where}.vcpus", 1),
                memory_mb=_int(spec["memory_mb"], f"{where}.memory_mb", 1),
                disk_gb=_int(spec.get("disk_gb", 0), f"{where}.disk_gb"),
                reserved=_numbers(spec.get("reserved", {}), f"{where}.reserved", int),
                allocation_ratios=_numbers(spec.get("allocation_ratios", {}),
                                           f"{where}.allocation_ratios", float),
                numa_nodes=_int(spec.get("numa_nodes", 0), f"{where}.numa_nodes"),
                network_devices=tuple(_device(d, f"{where}.network_devices[{i}]")
                                      for i, d in enumerate(devices)),
                traits=frozenset(_strings(spec.get("traits", []), f"{where}.traits")),
                arch=_str(spec.get("arch", "x86_64"), f"{where}.arch"),
            )
    except ShapeError as exc:
        raise FleetError(f"{where}: {exc}") from None
    known = ", ".join(drivers.DRIVERS)
    raise FleetError(f"{where}.driver: unknown driver {driver!r} (known: {known})")


def _device(data: Any, where: str) -> NetworkDevice:
    spec = _mapping(data, where, required={"name", "physnet"}, optional=DEVICE_KEYS)
    return NetworkDevice(
        name=_str(spec["name"], f"{where}.name"),
        physnet=_str(spec["physnet"], f"{where}.physnet"),
        vnic_types=_strings(spec.get("vnic_types", ["normal"]), f"{where}.vnic_types"),
        egress_kbps=_int(spec.get("egress_kbps", 0), f"{where}.egress_kbps"),
        ingress_kbps=_int(spec.get("ingress_kbps", 0), f"{where}.ingress_kbps"),
        packet_rate_kpps=_int(spec.get("packet_rate_kpps", 0), f"{where}.packet_rate_kpps"),
        packet_rate_on=_str(spec.get("packet_rate_on", "device"), f"{where}.packet_rate_on"),
    )


def _node_group(data: Any, where: str) -> BaremetalNodes:
    spec = _mapping(data, where, required={"resource_class"}, optional={"count", "traits"})
    return BaremetalNodes(
        count=_int(spec.get("count", 1), f"{where}.count", 1),
        resource_class=_str(spec["resource_class"], f"{where}.resource_class"),
        traits=frozenset(_strings(spec.get("traits", []), f"{where}.traits")),
    )


def _hosts(data: Any, shapes: Mapping[str, HostShape], next_index: dict[str, int],
           where: str) -> list[HostSpec]:
    spec = _mapping(data, where, required={"shape"},
                    optional={"count", "name", "start", "cell", "availability_zone",
                              "aggregates"})
    shape_name = _str(spec["shape"], f"{where}.shape")
    if shape_name not in shapes:
        raise FleetError(f"{where}.shape: unknown shape {shape_name!r} "
                         f"(known: {', '.join(sorted(shapes))})")
    count = _int(spec.get("count", 1), f"{where}.count", 1)
    pattern = _str(spec.get("name", "{shape}-{n}"), f"{where}.name")
    numbering = f"{pattern}\0{shape_name}"  # "{shape}-{n}" numbers each shape on its own
    start = _int(spec.get("start", next_index.get(numbering, 1)), f"{where}.start")
    next_index[numbering] = start + count
    cell = _str(spec.get("cell", DEFAULT_CELL), f"{where}.cell")
    zone = spec.get("availability_zone")
    if zone is not None and (":" in _str(zone, f"{where}.availability_zone")):
        raise FleetError(f"{where}.availability_zone: {zone!r} cannot contain ':'")
    aggregates = _strings(spec.get("aggregates", []), f"{where}.aggregates")
    hosts = []
    for n in range(start, start + count):
        try:
            name = pattern.format(n=n, shape=shape_name)
        except (KeyError, IndexError, ValueError) as exc:
            raise FleetError(f"{where}.name: bad pattern {pattern!r} ({exc!r}); "
                             "use {n} and {shape}") from None
        if not HOST_NAME.fullmatch(name):
            raise FleetError(f"{where}.name: {name!r} is not a host name")
        hosts.append(HostSpec(name, shapes[shape_name], cell, zone, aggregates))
    return hosts
