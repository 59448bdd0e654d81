"""Zone trees in one process for the tests: real zone managers, real local stores, a real
(in-process) bus with Ed25519 signing, and leaves that are fleets of plain numbers
(:class:`FakeLeaf`), so a tree of dozens of hosts starts in milliseconds. The end-to-end
tests with whole Stratus deployments as leaves use :class:`stratus.zones.tree.LocalTree`.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratus import config as configuration
from stratus.bus import Bus
from stratus.storage import engine as db
from stratus.zones import deploy, rank
from stratus.zones import store as zstore
from stratus.zones.capabilities import Capabilities, HostFigures, Requirement, from_hosts
from stratus.zones.manager import ZoneManager, ZoneOptions

FLAVORS = {"tiny": {"VCPU": 1, "MEMORY_MB": 512}, "big": {"VCPU": 8, "MEMORY_MB": 32768}}


@dataclass
class FakeHost:
    name: str
    vcpus: int = 16
    free_vcpus: int = 16
    memory_mb: int = 65536
    free_memory_mb: int = 65536
    disk_gb: int = 1000
    free_disk_gb: int = 1000
    instances: int = 0
    availability_zone: str = "nova"
    traits: frozenset[str] = frozenset()

    def candidate(self, zone: str) -> rank.Candidate:
        return rank.Candidate(zone=zone, host=self.name, node=self.name, vcpus=self.vcpus,
                              free_vcpus=self.free_vcpus, memory_mb=self.memory_mb,
                              free_memory_mb=self.free_memory_mb, disk_gb=self.disk_gb,
                              free_disk_gb=self.free_disk_gb, instances=self.instances,
                              route=(zone,))

    def fits(self, need: Requirement) -> bool:
        free = {"VCPU": self.free_vcpus, "MEMORY_MB": self.free_memory_mb,
                "DISK_GB": self.free_disk_gb}
        return (all(free.get(rc, 0) >= n for rc, n in need.resources.items())
                and need.traits <= self.traits
                and (need.availability_zone in (None, self.availability_zone)))


@dataclass
class FakeLeaf:
    """A leaf's duties (capabilities, candidates, builds, lookups) over a list of hosts."""

    zone: str
    hosts: list[FakeHost]
    fail_on: set[str] = field(default_factory=set)     # hosts whose builds fail
    build_delay: float = 0.0
    selects: int = 0
    servers_by_uuid: dict[str, dict[str, Any]] = field(default_factory=dict)
    builds: list[str] = field(default_factory=list)    # hosts asked to build, in order

    def capabilities(self, now: float) -> Capabilities:
        figures = [HostFigures(h.name, {"VCPU": h.vcpus, "MEMORY_MB": h.memory_mb,
                                        "DISK_GB": h.disk_gb},
                               {"VCPU": h.free_vcpus, "MEMORY_MB": h.free_memory_mb,
                                "DISK_GB": h.free_disk_gb}, h.traits, h.availability_zone)
                   for h in self.hosts]
        return from_hosts(self.zone, figures, FLAVORS, now)

    def candidates(self, request: Mapping[str, Any], n: int,
                   multipliers: dict[str, float]) -> tuple[list[rank.Candidate],
                                                           dict[str, int]]:
        self.selects += 1
        need = Requirement.from_dict(request.get("requirement") or {})
        fit = [h.candidate(self.zone) for h in self.hosts if h.fits(need)]
        rejected = {f"{self.zone}: too small": len(self.hosts) - len(fit)} \
            if len(fit) < len(self.hosts) else {}
        return rank.best(fit, multipliers, n), rejected

    def build(self, request: Mapping[str, Any], host: str,
              deadline: float | None = None) -> dict[str, Any]:
        self.builds.append(host)
        if self.build_delay:
            time.sleep(self.build_delay)
        if host in self.fail_on:
            return {"ok": False, "reason": f"{self.zone}/{host}: the hypervisor said no"}
        server = {"uuid": request["uuid"], "name": request["name"], "host": host,
                  "project_id": request["project_id"], "zone": self.zone}
        self.servers_by_uuid[str(request["uuid"])] = server
        return {"ok": True, "server": server}

    def show(self, uuid: str) -> dict[str, Any] | None:
        return self.servers_by_uuid.get(uuid)

    def delete(self, uuid: str) -> bool:
        return self.servers_by_uuid.pop(uuid, None) is not None

    def servers(self, uuids: list[str]) -> list[dict[str, Any]]:
        return [self.servers_by_uuid[u] for u in uuids if u in self.servers_by_uuid]

    def flavors(self) -> list[dict[str, Any]]:
        return [{"flavorid": name, "name": name, "vcpus": needs["VCPU"],
                 "memory_mb": needs["MEMORY_MB"], "root_gb": 0, "ephemeral_gb": 0,
                 "swap": 0, "is_public": True, "description": None, "extra_specs": {}}
                for name, needs in FLAVORS.items()]


class Tree:
    """Zone managers for ``children`` (parent -> children), leaves from ``leaves``."""

    def __init__(self, tmp_path: Path, children: Mapping[str, list[str]],
                 leaves: Mapping[str, FakeLeaf], *, weights: Mapping[str, float] | None = None,
                 zone_weights: Mapping[str, Mapping[str, float]] | None = None,
                 results: int = 3, select_timeout: float = 2.0, ttl: float = 30.0,
                 config: configuration.Config | None = None) -> None:
        self.tmp_path = tmp_path
        self.config = config or configuration.load([], overrides={
            ("DEFAULT", "data_dir"): str(tmp_path)})
        self.children = {p: list(k) for p, k in children.items()}
        self.leaves = dict(leaves)
        self.url = f"inproc://zones-{uuidlib.uuid4().hex[:8]}"
        kids = {k for ks in self.children.values() for k in ks}
        self.top = next(z for z in [*self.children, *self.leaves] if z not in kids)
        self.parents = {k: p for p, ks in self.children.items() for k in ks}
        self.options: dict[str, ZoneOptions] = {}
        self.managers: dict[str, ZoneManager] = {}
        self.buses: list[Bus] = []
        zones = self.order()
        for zone in zones:
            deploy.ensure_key(self.config, zone, "manager")
            weights_here = dict((zone_weights or {}).get(zone) or weights
                                or {"ram": 1.0, "cpu": 1.0})
            self.options[zone] = ZoneOptions(
                name=zone, parent=self.parents.get(zone), results=results,
                weights=weights_here, select_timeout=select_timeout,
                capabilities_interval=3600.0, capabilities_ttl=ttl, build_timeout=10.0)
        deploy.ensure_key(self.config, self.top, "api")
        for zone in zones:
            self.start_zone(zone)
        self.post_all()

    def order(self) -> list[str]:
        out, todo = [], [self.top]
        while todo:
            zone = todo.pop(0)
            out.append(zone)
            todo += self.children.get(zone, [])
        return out

    def start_zone(self, zone: str, clock: Any = time.time) -> ZoneManager:
        engine = deploy.open_store(f"sqlite:///{self.tmp_path / f'zone-{zone}.db'}")
        with db.write(engine) as conn:
            for child in self.children.get(zone, []):
                zstore.add_child(conn, child)
        bus = self.bus(zone, "manager")
        manager = ZoneManager(self.options[zone], engine, bus, self.leaves.get(zone),
                              clock=clock)
        manager.start()
        self.managers[zone] = manager
        return manager

    def stop_zone(self, zone: str) -> None:
        manager = self.managers.pop(zone)
        manager.stop()
        manager.bus.close()
        manager.engine.dispose()

    def post_all(self) -> None:
        for zone in reversed(self.order()):
            if zone in self.managers:
                self.managers[zone].post_now()

    def bus(self, zone: str, service: str, timeout: float = 10.0) -> Bus:
        deploy.ensure_key(self.config, zone, service)
        bus = deploy.signed_bus(self.config, zone, service, url=self.url, timeout=timeout)
        self.buses.append(bus)
        return bus

    def client(self, zone: str, service: str, server: str, timeout: float = 10.0) -> Any:
        from stratus.zones.rpcapi import ZoneRPC

        return self.bus(zone, service, timeout).client(ZoneRPC, server=server, timeout=timeout)

    def api(self) -> Any:
        """The top's API service, as a ZoneRPC client of the top zone."""
        return self.client(self.top, "api", self.top)

    def boot(self, name: str = "vm", flavor: str = "tiny",
             requirement: Mapping[str, Any] | None = None, **extra: Any) -> str:
        uuid = str(uuidlib.uuid4())
        need = requirement if requirement is not None else {
            "resources": FLAVORS[flavor], "flavor": flavor}
        self.api().call("boot", request={"uuid": uuid, "name": name, "flavor": flavor,
                                         "project_id": "p1", "requirement": dict(need),
                                         **extra})
        return uuid

    def wait(self, uuid: str, seconds: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        api = self.api()
        while time.monotonic() < deadline:
            status = api.call("status", uuid=uuid)
            if status and status["state"] != zstore.PENDING:
                return dict(status)
            time.sleep(0.02)
        raise AssertionError(f"boot {uuid} still pending after {seconds}s")

    def stop(self) -> None:
        for zone in list(self.managers):
            self.stop_zone(zone)
        for bus in self.buses:
            bus.close()
