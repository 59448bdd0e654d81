"""Zone trees in one process for the tests: real zone managers, real local stores, a real
(in-process) bus with Ed25519 signing, and leaves that are fleets of plain numbers
(:class:`FakeLeaf`), so a tree of dozens of hosts starts in milliseconds. A fake leaf
answers the top's compute API requests with a few lines of its own (create, show,
delete, list); the end-to-end tests with whole Stratus deployments as leaves, whose
compute API is the real one, use :class:`stratus.zones.tree.LocalTree`.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratus import config as configuration
from stratus.bus import Bus
from stratus.scheduler import weighers
from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import Flavor, RequestSpec, ServerGroup
from stratus.storage import engine as db
from stratus.zones import deploy, rank
from stratus.zones import store as zstore
from stratus.zones.capabilities import ANY_IMAGE, Capabilities, HostFigures, Requirement, from_hosts
from stratus.zones.manager import ZoneManager, ZoneOptions

FLAVORS = {"tiny": {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1},
           "big": {"VCPU": 8, "MEMORY_MB": 32768, "DISK_GB": 10}}
WEIGHTS = {"ram": 1.0, "cpu": 1.0}


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
    project_instances: int = 0
    availability_zone: str = "nova"
    traits: frozenset[str] = frozenset()

    def state(self) -> HostState:
        return HostState(host=self.name, nodename=self.name, uuid=self.name,
                         vcpus_total=self.vcpus, vcpus_used=self.vcpus - self.free_vcpus,
                         memory_mb_total=self.memory_mb,
                         memory_mb_used=self.memory_mb - self.free_memory_mb,
                         disk_gb_total=self.disk_gb, disk_gb_used=self.disk_gb - self.free_disk_gb,
                         instance_count=self.instances,
                         project_instance_count=min(self.project_instances, self.instances))

    def candidate(self, zone: str) -> rank.Candidate:
        return rank.Candidate.of(zone, self.state(), False)

    def fits(self, need: Requirement) -> bool:
        free = {"VCPU": self.free_vcpus, "MEMORY_MB": self.free_memory_mb,
                "DISK_GB": self.free_disk_gb}
        return (all(free.get(rc, 0) >= n for rc, n in need.resources.items())
                and need.traits <= self.traits
                and (need.availability_zone in (None, self.availability_zone)))


def spec_of(request: Mapping[str, Any], members: frozenset[str] = frozenset()) -> RequestSpec:
    group = request.get("group")
    return RequestSpec(flavor=Flavor("f", 0, 0, 0), project_id=str(request["project_id"]),
                       user_id="", server_group=ServerGroup(
                           "g", str(group["policy"]), members) if group else None)


@dataclass
class FakeLeaf:
    """A leaf's duties (capabilities, survey and rank, the compute API's requests about its
    servers, builds) over a list of hosts."""

    zone: str
    hosts: list[FakeHost]
    fail_on: set[str] = field(default_factory=set)     # hosts whose builds fail
    build_delay: float = 0.0
    selects: int = 0
    servers_by_uuid: dict[str, dict[str, Any]] = field(default_factory=dict)
    builds: list[str] = field(default_factory=list)    # hosts asked to build, in order
    weights: dict[str, float] = field(default_factory=lambda: dict(WEIGHTS))
    surveys: dict[str, tuple[list[HostState], RequestSpec]] = field(default_factory=dict)

    def capabilities(self, now: float) -> Capabilities:
        figures = [HostFigures(h.name, {"VCPU": h.vcpus, "MEMORY_MB": h.memory_mb,
                                        "DISK_GB": h.disk_gb},
                               {"VCPU": h.free_vcpus, "MEMORY_MB": h.free_memory_mb,
                                "DISK_GB": h.free_disk_gb}, h.traits, h.availability_zone)
                   for h in self.hosts]
        caps = from_hosts(self.zone, figures, FLAVORS, now, images=[ANY_IMAGE])
        return dataclasses.replace(caps, weights=dict(self.weights))

    def survey(self, selection: str, request: Mapping[str, Any],
               multipliers: Mapping[str, float]) -> tuple[rank.Bounds, int, dict[str, int]]:
        self.selects += 1
        need = Requirement.from_dict(request.get("requirement") or {})
        states = [h.state() for h in self.hosts if h.fits(need)]
        for picked in request.get("pending") or []:
            for state in states:
                if picked["zone"] == self.zone and picked["host"] == state.host:
                    state.consume(picked["vcpus"], picked["memory_mb"], picked["disk_gb"],
                                  picked["uuid"])
        free = {"VCPU": "free_vcpus", "MEMORY_MB": "free_memory_mb", "DISK_GB": "free_disk_gb"}
        states = [s for s in states if all(getattr(s, free[rc]) >= n
                                           for rc, n in need.resources.items() if rc in free)]
        rejected = {f"{self.zone}: too small": len(self.hosts) - len(states)} \
            if len(states) < len(self.hosts) else {}
        spec = spec_of(request)
        self.surveys[selection] = (states, spec)
        return rank.bounds_of(states, spec, multipliers), len(states), rejected

    def rank(self, selection: str, bounds: Mapping[str, tuple[float, float]], n: int,
             multipliers: Mapping[str, float]) -> list[rank.Candidate]:
        states, spec = self.surveys.pop(selection, ([], None))
        if spec is None:
            return []
        order = rank.ranked(states, spec, multipliers, bounds,
                            [(self.zone, s.host) for s in states])
        return [rank.Candidate.of(self.zone, states[i], False) for i in order[:n]]

    # ---- the compute API, as far as the tests need it ----------------------------------

    def api_call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        method, path = request["method"], request["path"].removeprefix("/v2.1")
        zone = request.get("zone") or {}
        if method == "POST" and path == "/servers":
            build = zone["build"]
            body = json.loads(base64.b64decode(request["body"]))["server"]
            self.builds.append(build["host"])
            self.servers_by_uuid[build["uuid"]] = {
                "id": build["uuid"], "name": body["name"], "host": build["host"],
                "project_id": request["caller"]["project_id"], "zone": self.zone,
                "created": time.time()}
            return _answer(202, {"server": {"id": build["uuid"]}})
        if path in ("/servers", "/servers/detail"):
            listed = sorted(self.servers_by_uuid.values(), key=lambda s: s["id"])
            return _answer(200, {"servers": [
                dict(s, **{"stratus:sort": ["2026-01-01T00:00:00", s["id"]]})
                for s in listed]})
        uuid = path.split("/")[2]
        server = self.servers_by_uuid.get(uuid)
        if server is None:
            return _answer(404, {"itemNotFound": {"code": 404, "message":
                                                  f"Instance {uuid} could not be found."}})
        if method == "DELETE":
            del self.servers_by_uuid[uuid]
            return _answer(204, None)
        return _answer(200, {"server": server})

    def settle(self, uuid: str, deadline: float) -> dict[str, Any]:
        if self.build_delay:
            time.sleep(self.build_delay)
        server = self.servers_by_uuid.get(uuid)
        if server is None:
            return {"ok": False, "reason": f"{self.zone}: the server is gone"}
        if server["host"] in self.fail_on:
            return {"ok": False, "reason": f"{self.zone}/{server['host']}: the hypervisor "
                                           "said no"}
        return {"ok": True, "host": server["host"]}

    def withdraw(self, uuid: str) -> bool:
        return self.servers_by_uuid.pop(uuid, None) is not None

    def find(self, kind: str, ident: str) -> dict[str, Any] | None:
        if kind == "server" and ident in self.servers_by_uuid:
            return {"project_id": self.servers_by_uuid[ident]["project_id"]}
        return None

    def usage(self, project_id: str) -> dict[str, int]:
        mine = [s for s in self.servers_by_uuid.values() if s["project_id"] == project_id]
        return {"instances": len(mine), "cores": len(mine), "ram": 512 * len(mine)}

    def flavors(self) -> list[dict[str, Any]]:
        return [{"flavorid": name, "name": name, "vcpus": needs["VCPU"],
                 "memory_mb": needs["MEMORY_MB"], "root_gb": needs["DISK_GB"],
                 "ephemeral_gb": 0, "swap": 0, "is_public": True, "description": None,
                 "extra_specs": {}}
                for name, needs in FLAVORS.items()]


def _answer(status: int, body: Any) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else b""
    return {"status": status, "headers": [["Content-Type", "application/json"]]
            if body is not None else [], "body": base64.b64encode(data).decode()}


def api_request(method: str, path: str, body: Any = None, project: str = "p1",
                zone: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A compute API request as the top sends it down (``stratus.zones.wire``)."""
    out: dict[str, Any] = {
        "method": method, "path": path, "query": "",
        "headers": {"Content-Type": "application/json"} if body is not None else {},
        "body": base64.b64encode(json.dumps(body).encode() if body is not None else b"")
        .decode(),
        "base": "http://top", "caller": {"user_id": "u1", "project_id": project,
                                         "roles": [], "system_scope": None,
                                         "request_id": "req-test"}}
    if zone:
        out["zone"] = dict(zone)
    return out


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
        self._api: Any = None
        zones = self.order()
        for zone in zones:
            deploy.ensure_key(self.config, zone, "manager")
            weights_here = dict((zone_weights or {}).get(zone) or weights or WEIGHTS)
            if zone in self.leaves:
                self.leaves[zone].weights = weights_here
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
        bus = self.bus(zone, "manager", store=engine)
        manager = ZoneManager(self.options[zone], engine, bus, self.leaves.get(zone),  # type: ignore[arg-type]
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

    def bus(self, zone: str, service: str, timeout: float = 10.0, store: Any = None) -> Bus:
        deploy.ensure_key(self.config, zone, service)
        bus = deploy.signed_bus(self.config, zone, service, url=self.url, timeout=timeout,
                                store=store)
        self.buses.append(bus)
        return bus

    def client(self, zone: str, service: str, server: str, timeout: float = 10.0) -> Any:
        from stratus.zones.rpcapi import ZoneRPC

        return self.bus(zone, service, timeout).client(ZoneRPC, server=server, timeout=timeout)

    def api(self) -> Any:
        """The top's API service, as a ZoneRPC client of the top zone (one bus, made on
        first use, as the API process keeps one)."""
        if self._api is None:
            self._api = self.client(self.top, "api", self.top)
        return self._api

    def select(self, request: Mapping[str, Any] | None = None, n: int = 3,
               budget: float = 2.0) -> Any:
        """The top's selection (both passes) for a request of project p1."""
        return self.managers[self.top].selector.select(
            {"project_id": "p1", **(request or {})}, n, budget)

    def boot(self, name: str = "vm", flavor: str = "tiny",
             requirement: Mapping[str, Any] | None = None, count: int = 1,
             batch: str | None = None, **extra: Any) -> list[str] | str:
        uuids = [str(uuidlib.uuid4()) for _ in range(count)]
        need = requirement if requirement is not None else {
            "resources": FLAVORS[flavor], "flavor": flavor}
        answer = self.api().call("boot", request={
            "batch": batch or uuids[0],
            "servers": [{"uuid": u, "name": name if count == 1 else f"{name}-{i + 1}"}
                        for i, u in enumerate(uuids)],
            "project_id": "p1", "user_id": "u1", "flavor": {"flavorid": flavor},
            "resources": dict(FLAVORS[flavor]), "requirement": dict(need),
            "api": api_request("POST", "/v2.1/servers",
                               {"server": {"name": name, "flavorRef": flavor}}),
            **extra})
        assert answer["status"] == 202, answer
        return answer["servers"] if count > 1 else answer["servers"][0]

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


__all__ = ["FLAVORS", "FakeHost", "FakeLeaf", "Tree", "api_request", "weighers"]
