"""A seeded soak of every move (design document 004): random sequences of boots (with no
port, a plain port, or a port guaranteeing bandwidth), resizes, cold and live
migrations, confirms, reverts, shelves and unshelves, evacuations of a host taken down,
injected spawn failures and deletes, on a fleet of hosts with NICs; after every step
the allocation audit (Placement against the cells, the migrations and the ports) finds
nothing. The short run is in the default suite; ``-m slow`` runs 50 hosts."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from stratus.compute.shapes import NetworkDevice
from tests.functional.compute_world import World
from tests.functional.test_servers_with_ports import bw_policy, port, provider_net

SETTLED = ("ACTIVE", "ERROR", "VERIFY_RESIZE", "SHELVED", "SHELVED_OFFLOADED")


class Soak:
    def __init__(self, world: World, hosts: int, seed: int) -> None:
        self.world, self.rnd = world, random.Random(seed)
        self.log: list[str] = []
        for n in range(1, hosts + 1):
            nics = (NetworkDevice("ens1", "physnet1", ("normal",), 20_000, 20_000),)
            world.add_compute(f"cmp{n:02d}", vcpus=8, memory_mb=8192, nics=nics)
        for svc in world.computes.values():
            svc.orphan_grace = 0
        self.net = provider_net(world, "physnet1")
        self.policy = bw_policy(world, egress=3000)
        self.flavors = [world.flavor("small", vcpus=1, ram=512, disk=1),
                        world.flavor("large", vcpus=2, ram=1024, disk=2)]
        self.down: list[str] = []

    # ---- what the soak does -----------------------------------------------------------

    def servers(self, status: str | None = None) -> list[dict[str, Any]]:
        found = self.world.client.get("/servers/detail").json()["servers"]
        return [s for s in found if status is None or s["status"] == status]

    def act(self, sid: str, body: dict[str, Any]) -> None:
        resp = self.world.client.post(f"/servers/{sid}/action", json=body)
        # A refusal (a host just taken down, a state that moved on) is an answer too.
        assert resp.status_code < 500, resp.text

    def boot(self) -> None:
        kind = self.rnd.choice(["none", "network", "bandwidth"])
        if kind == "none":
            networks: Any = "none"
        elif kind == "network":
            networks = [{"uuid": self.net["id"]}]
        else:
            networks = [{"port": port(self.world, self.net, self.policy)["id"]}]
        flavor = self.rnd.choice(self.flavors)
        resp = self.world.client.post("/servers", json={"server": {
            "name": f"s{len(self.log)}", "flavorRef": flavor["id"], "networks": networks}})
        assert resp.status_code == 202, resp.text

    def move(self) -> None:
        active = self.servers("ACTIVE")
        if not active:
            return self.boot()
        sid = self.rnd.choice(active)["id"]
        body = self.rnd.choice([
            {"migrate": None}, {"resize": {"flavorRef": self.rnd.choice(self.flavors)["id"]}},
            {"os-migrateLive": {"host": None, "block_migration": "auto"}},
            {"shelve": None}])
        self.act(sid, body)

    def finish(self) -> None:
        for server in self.servers("VERIFY_RESIZE"):
            self.act(server["id"], {self.rnd.choice(["confirmResize", "revertResize"]): None})
        for server in self.servers("SHELVED_OFFLOADED"):
            if self.rnd.random() < 0.5:
                self.act(server["id"], {"unshelve": None})

    def delete(self) -> None:
        found = self.servers()
        if found:
            sid = self.rnd.choice(found)["id"]
            assert self.world.client.delete(f"/servers/{sid}").status_code in (204, 404)

    def fail_spawns(self) -> None:
        host = self.rnd.choice(sorted(self.world.computes))
        self.world.computes[host].driver.faults.fail_next_spawns(1, "soak: injected")

    def host_down(self) -> None:
        """A host dies; its servers are evacuated; later it comes back."""
        if self.down:
            return self.host_up()
        up = [h for h in sorted(self.world.computes) if h not in self.down]
        host = self.rnd.choice(up)
        self.world.computes[host].stop()
        self.world.client.put(f"/os-services/{self.world.service_id(host)}",
                              json={"forced_down": True})
        self.down.append(host)
        for server in self.servers():
            if server.get("OS-EXT-SRV-ATTR:host") == host and server["status"] in (
                    "ACTIVE", "ERROR"):
                self.act(server["id"], {"evacuate": {}})

    def host_up(self) -> None:
        host = self.down.pop()
        self.world.computes[host].start()
        self.world.client.put(f"/os-services/{self.world.service_id(host)}",
                              json={"forced_down": False})

    # ---- the loop ---------------------------------------------------------------------

    def settle(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while True:
            busy = [s for s in self.servers()
                    if s["status"] not in SETTLED or s["OS-EXT-STS:task_state"]]
            if not busy:
                return
            assert time.monotonic() < deadline, f"never settled: {busy[:2]} after {self.log}"
            time.sleep(0.02)

    def run(self, steps: int) -> None:
        actions: list[tuple[float, Callable[[], None]]] = [
            (4, self.boot), (4, self.move), (3, self.finish), (1.5, self.delete),
            (1, self.fail_spawns), (0.7, self.host_down)]
        weights = [w for w, _ in actions]
        for _ in range(steps):
            _, action = self.rnd.choices(actions, weights)[0]
            self.log.append(action.__name__)
            action()
            self.settle()
            findings = self.world.audit()
            assert findings == [], f"after {self.log}: {[f.line() for f in findings]}"
        while self.down:
            self.host_up()
        for server in self.servers():
            assert self.world.client.delete(f"/servers/{server['id']}").status_code == 204
        assert self.world.audit() == []
        assert self.world.placement.get_allocations  # the books are empty at the end:
        for host in self.world.computes:
            usage = self.world.placement.usages(self.world.root(host))
            assert not any(usage.values()), (host, usage)


@pytest.mark.parametrize("seed", [11, 2026])
def test_soak_short(tmp_path, placement_app, database_url, seed):
    world = World(tmp_path, placement_app, database_url)
    try:
        Soak(world, hosts=6, seed=seed).run(steps=40)
    finally:
        world.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_soak_fifty_hosts(tmp_path, placement_app, database_url, seed):
    world = World(tmp_path, placement_app, database_url)
    try:
        Soak(world, hosts=50, seed=seed).run(steps=300)
    finally:
        world.close()
