"""Fuzzing a whole cloud: the compute API with real conductors, schedulers and computes
behind it (servers ACTIVE, so fuzzed actions really resize, migrate, shelve...), then the
books: no answer of 500 or more, Placement's running totals balance, and the allocation
audit finds nothing once every server has settled."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.functional.compute_world import World
from tests.fuzz.engine import report, run
from tests.fuzz.test_fuzz import FUZZ_REQUESTS, _count, compute_surface


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url, allow_resize_to_same_host=True)
    yield w
    w.close()


def _settle(world: World, seconds: float = 60.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while True:
        servers = world.client.get("/servers/detail", params={"all_tenants": "1"}).json()[
            "servers"]
        busy = [s for s in servers if s["OS-EXT-STS:task_state"] or s["status"] == "BUILD"]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.1)


def test_a_fuzzed_cloud_keeps_its_books(world: World) -> None:
    for name in ("h1", "h2", "h3"):
        world.add_compute(name)
    world.flavor("fz1", vcpus=1, ram=256, disk=1, id="fz1")
    surface = compute_surface(world.client)   # boots one server itself
    for i in range(3):
        world.boot("fz1", name=f"live{i}")
    _settle(world)
    servers = world.client.get("/servers").json()["servers"]
    surface.ids["server_id"] = [s["id"] for s in servers]
    # Aimed at servers and their actions, half of them as a careful client sends them,
    # so that moves really start and the fuzzed requests land in the middle of them.
    surface.routes = [r for r in surface.routes if r[0].startswith("/servers")]
    findings, statuses = run(world.client.http, surface, seed=7,
                             count=_count(FUZZ_REQUESTS // 2), clean_share=0.5)
    assert not findings, f"{len(findings)} answers >= 500:\n{report(findings)}"
    assert statuses.get(202, 0) >= 10, statuses   # boots and moves really happened
    busy = _settle(world)
    assert not busy, [(s["id"], s["status"], s["OS-EXT-STS:task_state"]) for s in busy]
    assert world.audit() == []
