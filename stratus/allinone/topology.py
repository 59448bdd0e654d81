"""Which simulated hosts ``stratus serve`` runs, in which cells, and how a data directory
remembers it.

``--hosts N --cells K`` means N libvirt-like hosts named ``compute0001``...,
host n in cell ``((n - 1) mod K) + 1`` (round robin, so growing a fleet never
moves a host); ``--fleet FILE`` means the fleet file's hosts, shapes, cells,
availability zones and aggregates (:mod:`stratus.compute.fleet`).

The first start writes what it was asked for to ``serve.json`` in the data
directory. A restart with no topology flags runs the same cloud again (same
hosts, so the same provider UUIDs); a restart asking for a *different* cloud
is refused with one line rather than half-reusing the old one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from stratus.compute.fleet import Fleet, FleetError, HostSpec, load_fleet, parse_fleet
from stratus.compute.shapes import LibvirtShape, NetworkDevice

STATE_FILE = "serve.json"
DEFAULT_HOSTS = 4
DEFAULT_CELLS = 1
HOST_NAME = "compute{n:04d}"
# The same machine `stratus compute` simulates by default: 16 vCPU, 64 GiB, 1000 GB, and
# a 10 Gbit/s NIC on physnet1 (normal and direct vNICs), whose bandwidth ports reserve.
DEFAULT_NIC = NetworkDevice("ens1", "physnet1", ("normal", "direct"),
                            egress_kbps=10_000_000, ingress_kbps=10_000_000)
DEFAULT_SHAPE = LibvirtShape("standard", vcpus=16, memory_mb=65536, disk_gb=1000,
                             network_devices=(DEFAULT_NIC,))
CELL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class TopologyError(ValueError):
    """The requested cloud cannot be run (one line for the CLI)."""


@dataclass(frozen=True)
class Topology:
    fleet: Fleet
    cells: tuple[str, ...]     # cell names, cell0 not included
    record: dict[str, Any]     # what serve.json holds

    @property
    def hosts(self) -> tuple[HostSpec, ...]:
        return self.fleet.hosts

    def describe(self) -> str:
        return describe(self.record)


def describe(record: dict[str, Any]) -> str:
    if "fleet" in record:
        return f"--fleet {record.get('fleet_file', '(a fleet file)')}"
    return f"--hosts {record['hosts']} --cells {record['cells']}"


def from_counts(hosts: int, cells: int) -> Topology:
    if hosts < 1 or cells < 1:
        raise TopologyError("--hosts and --cells must be at least 1")
    names = tuple(f"cell{k}" for k in range(1, cells + 1))
    specs = tuple(HostSpec(HOST_NAME.format(n=n), DEFAULT_SHAPE, cell=names[(n - 1) % cells])
                  for n in range(1, hosts + 1))
    fleet = Fleet({DEFAULT_SHAPE.name: DEFAULT_SHAPE}, specs)
    return Topology(fleet, names, {"hosts": hosts, "cells": cells})


def from_fleet_data(data: Any, source: str) -> Topology:
    try:
        fleet = parse_fleet(data, source)
    except FleetError as exc:
        raise TopologyError(str(exc)) from None
    for name in fleet.cells:
        if not CELL_NAME.fullmatch(name) or name == "cell0":
            raise TopologyError(f"{source}: cell name {name!r} cannot be used (letters, digits, "
                                "'-' and '_'; not cell0, which holds servers without a host)")
    return Topology(fleet, tuple(fleet.cells), {"fleet": data, "fleet_file": source})


def _load_fleet_file(path: str) -> Topology:
    try:
        load_fleet(path)  # its own one-line errors for unreadable or invalid files
    except FleetError as exc:
        raise TopologyError(str(exc)) from None
    import yaml

    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    # Stored as JSON: normalise now so a restart compares like with like.
    return from_fleet_data(json.loads(json.dumps(data)), os.path.abspath(path))


def _read_record(data_dir: str) -> dict[str, Any] | None:
    path = os.path.join(data_dir, STATE_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TopologyError(f"cannot read {path}: {exc}") from None
    if not isinstance(record, dict) or not ({"hosts", "cells"} <= set(record)
                                            or "fleet" in record):
        raise TopologyError(f"{path} is not a topology stratus serve wrote")
    return record


def _from_record(record: dict[str, Any]) -> Topology:
    if "fleet" in record:
        return from_fleet_data(record["fleet"], str(record.get("fleet_file", "fleet")))
    return from_counts(int(record["hosts"]), int(record["cells"]))


def resolve(data_dir: str, hosts: int | None = None, cells: int | None = None,
            fleet_file: str | None = None) -> Topology:
    """The cloud to run in ``data_dir``: what is asked, else what was run there before."""
    if fleet_file and (hosts is not None or cells is not None):
        raise TopologyError("--fleet describes the hosts and cells itself; drop --hosts/--cells")
    recorded = _read_record(data_dir)
    asked: Topology | None = None
    if fleet_file:
        asked = _load_fleet_file(fleet_file)
    elif hosts is not None or cells is not None:
        # A flag not given means what the data directory already has (or the default).
        base = recorded if recorded and "fleet" not in recorded else {
            "hosts": DEFAULT_HOSTS, "cells": DEFAULT_CELLS}
        asked = from_counts(hosts if hosts is not None else int(base["hosts"]),
                            cells if cells is not None else int(base["cells"]))
    if recorded is None:
        topology = asked or from_counts(DEFAULT_HOSTS, DEFAULT_CELLS)
        _write_record(data_dir, topology.record)
        return topology
    if asked is None:
        return _from_record(recorded)
    same = (asked.record.get("fleet") == recorded.get("fleet") if "fleet" in asked.record
            else {k: recorded.get(k) for k in ("hosts", "cells")} == asked.record)
    if not same:
        raise TopologyError(f"{data_dir} holds a cloud started with {describe(recorded)}; "
                            "start it the same way (or with no --hosts/--cells/--fleet), or "
                            "use another --data-dir")
    return _from_record(recorded)


def _write_record(data_dir: str, record: dict[str, Any]) -> None:
    path = os.path.join(data_dir, STATE_FILE)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)
