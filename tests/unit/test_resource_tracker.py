"""The resource tracker's Placement sync against a small in-memory Placement with generations,
where another writer can be made to win races on command."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import stratus.cells
from stratus.cells import services
from stratus.compute.drivers import LibvirtDriver
from stratus.compute.provider_sync import PlacementSync, SyncConflict, merged
from stratus.compute.provider_tree import Provider
from stratus.compute.resource_tracker import ResourceTracker
from stratus.compute.rpcapi import BINARY
from stratus.compute.shapes import LibvirtShape, NetworkDevice
from stratus.placement.client import ConcurrentUpdate, Conflict, NotFound
from stratus.storage import engine as db
from stratus.storage import migrate

CELL = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")
NIC = NetworkDevice("ens1", "physnet1", egress_kbps=1000)
BIG = LibvirtShape("big", vcpus=8, memory_mb=8192, disk_gb=100, numa_nodes=2,
                   network_devices=(NIC,), traits=frozenset({"CUSTOM_FAST"}))
SMALL = LibvirtShape("small", vcpus=4, memory_mb=4096, disk_gb=100)


class FakePlacement:
    """The PlacementClient methods the tracker uses, with generation compare-and-swap.

    ``races[uuid] = n``: the next n writes to that provider lose to another writer
    (its generation moves first), as a concurrent report client would make them."""

    def __init__(self) -> None:
        self.rps: dict[str, dict[str, Any]] = {}
        self.classes: set[str] = set()
        self.traits: set[str] = set()
        self.calls: Counter[str] = Counter()
        self.races: Counter[str] = Counter()

    def _rp(self, uuid: str) -> dict[str, Any]:
        if uuid not in self.rps:
            raise NotFound("GET", uuid, 404, None, "no such provider")
        return self.rps[uuid]

    def _write(self, uuid: str, generation: int, key: str, value: Any) -> int:
        self.calls[f"set_{key}"] += 1
        rp = self._rp(uuid)
        if self.races[uuid]:
            self.races[uuid] -= 1
            rp["generation"] += 1  # the other writer's change
        if generation != rp["generation"]:
            raise ConcurrentUpdate("PUT", uuid, 409, "placement.concurrent_update", "stale")
        rp[key] = value
        rp["generation"] += 1
        return int(rp["generation"])

    def get_provider(self, uuid: str) -> dict[str, Any] | None:
        self.calls["get_provider"] += 1
        rp = self.rps.get(uuid)
        return None if rp is None else {"uuid": uuid, "generation": rp["generation"]}

    def create_provider(self, uuid: str, name: str, parent: str | None = None) -> dict:
        if any(rp["name"] == name for rp in self.rps.values()):
            raise Conflict("POST", "/resource_providers", 409, None, "name taken")
        self.rps[uuid] = {"name": name, "parent": parent, "generation": 0, "inventories": {},
                          "traits": set(), "aggregates": set()}
        return {"uuid": uuid, "generation": 0}

    def delete_provider(self, uuid: str) -> None:
        if any(rp["parent"] == uuid for rp in self.rps.values()):
            raise Conflict("DELETE", uuid, 409, None, "has children")
        del self.rps[uuid]

    def providers_in_tree(self, uuid: str) -> list[dict[str, Any]]:
        def root(u: str) -> str:
            while self.rps[u]["parent"]:
                u = self.rps[u]["parent"]
            return u

        return [{"uuid": u, "parent_provider_uuid": rp["parent"]}
                for u, rp in self.rps.items() if root(u) == root(uuid)]

    def get_inventories(self, uuid: str) -> tuple[dict, int]:
        rp = self._rp(uuid)
        return {rc: dict(v) for rc, v in rp["inventories"].items()}, rp["generation"]

    def set_inventories(self, uuid: str, generation: int, inventories: dict) -> int:
        unknown = [rc for rc in inventories if rc.startswith("CUSTOM_")
                   and rc not in self.classes]
        assert not unknown, f"class {unknown} used before it was created"
        return self._write(uuid, generation, "inventories", inventories)

    def get_traits(self, uuid: str) -> tuple[set[str], int]:
        rp = self._rp(uuid)
        return set(rp["traits"]), rp["generation"]

    def set_traits(self, uuid: str, generation: int, traits: Any) -> int:
        unknown = [t for t in traits if t.startswith("CUSTOM_") and t not in self.traits]
        assert not unknown, f"trait {unknown} used before it was created"
        return self._write(uuid, generation, "traits", set(traits))

    def get_aggregates(self, uuid: str) -> tuple[set[str], int]:
        rp = self._rp(uuid)
        return set(rp["aggregates"]), rp["generation"]

    def set_aggregates(self, uuid: str, generation: int, aggregates: Any) -> int:
        return self._write(uuid, generation, "aggregates", set(aggregates))

    def ensure_trait(self, name: str) -> None:
        self.calls["ensure_trait"] += 1
        self.traits.add(name)

    def ensure_resource_class(self, name: str) -> None:
        self.calls["ensure_resource_class"] += 1
        self.classes.add(name)


@pytest.fixture
def fake() -> FakePlacement:
    return FakePlacement()


@pytest.fixture
def cell_engine() -> Iterator[sa.Engine]:
    engine = db.create_engine("sqlite://")
    migrate.upgrade(engine, CELL)
    with db.write(engine) as conn:
        services.register(conn, "cmp1", BINARY, 1001)
    yield engine
    engine.dispose()


def writes(fake: FakePlacement) -> int:
    return sum(n for name, n in fake.calls.items() if name.startswith("set_"))


# -- PlacementSync -------------------------------------------------------------------


def test_merged_keeps_foreign_names_and_drops_only_managed_unwanted_ones() -> None:
    assert merged({"OP", "OLD", "KEEP"}, {"KEEP", "NEW"}, {"OLD", "KEEP"}) == {
        "OP", "KEEP", "NEW"}


def test_converging_writes_only_what_differs(fake: FakePlacement) -> None:
    sync = PlacementSync(fake)  # type: ignore[arg-type]
    rp = Provider("n", "u1", traits=frozenset({"CUSTOM_A"}))
    gen = sync.ensure_provider(rp)
    step = sync.traits("u1", {"CUSTOM_A"}, expected=gen)
    assert step.changed and step.undisturbed and step.generation == 1
    again = sync.traits("u1", {"CUSTOM_A"}, expected=step.generation)
    assert not again.changed and again.generation == 1
    assert fake.calls["set_traits"] == 1
    sync.traits("u1", {"CUSTOM_A", "CUSTOM_B"})
    assert fake.calls["ensure_trait"] == 2  # A once, B once: created before use, remembered


def test_a_lost_race_is_re_read_and_retried(fake: FakePlacement) -> None:
    sync = PlacementSync(fake)  # type: ignore[arg-type]
    gen = sync.ensure_provider(Provider("n", "u1"))
    fake.races["u1"] = 2
    step = sync.aggregates("u1", {"agg"}, expected=gen)
    assert fake.rps["u1"]["aggregates"] == {"agg"}
    assert step.changed and not step.undisturbed
    assert fake.calls["set_aggregates"] == 3


def test_losing_every_race_is_a_sync_conflict_naming_the_provider(fake) -> None:
    sync = PlacementSync(fake, retries=3)  # type: ignore[arg-type]
    sync.ensure_provider(Provider("n", "u1"))
    fake.races["u1"] = 99
    with pytest.raises(SyncConflict, match=r"traits of provider u1: .* 3 attempts"):
        sync.traits("u1", {"COMPUTE_NODE"})


def test_a_provider_created_meanwhile_is_not_an_error(fake: FakePlacement) -> None:
    sync = PlacementSync(fake)  # type: ignore[arg-type]
    real_get = fake.get_provider
    seen = []

    def racing_get(uuid: str) -> Any:
        found = real_get(uuid)
        if not seen:  # another pass creates it between our read and our create
            seen.append(uuid)
            fake.create_provider(uuid, "n")
        return found

    fake.get_provider = racing_get  # type: ignore[method-assign]
    assert sync.ensure_provider(Provider("n", "u1")) == 0
    fake.create_provider("u2", "taken")
    with pytest.raises(Conflict):  # a name held by another uuid is a real conflict
        sync.ensure_provider(Provider("taken", "u3"))


# -- ResourceTracker ------------------------------------------------------------------


def tracker(fake: FakePlacement, engine: sa.Engine, shape: LibvirtShape) -> ResourceTracker:
    return ResourceTracker("cmp1", LibvirtDriver("cmp1", shape), fake,  # type: ignore[arg-type]
                           engine)


def test_a_steady_host_costs_one_read_per_provider(fake, cell_engine) -> None:
    rt = tracker(fake, cell_engine, BIG)
    assert rt.update_available_resource().synced == ["cmp1"]
    assert fake.classes == set() and fake.traits == {"CUSTOM_FAST", "CUSTOM_PHYSNET_PHYSNET1",
                                                     "CUSTOM_VNIC_TYPE_NORMAL"}
    fake.calls.clear()
    rt.update_available_resource()
    assert writes(fake) == 0
    assert fake.calls == Counter({"get_provider": 4})


def test_a_race_during_a_pass_still_converges_and_the_next_pass_checks_again(
        fake, cell_engine) -> None:
    rt = tracker(fake, cell_engine, SMALL)
    rt.update_available_resource()
    root = next(iter(fake.rps))
    fake.rps[root]["traits"].discard("COMPUTE_NODE")
    fake.rps[root]["generation"] += 1
    fake.races[root] = 1
    assert rt.update_available_resource().synced == ["cmp1"]
    assert "COMPUTE_NODE" in fake.rps[root]["traits"]
    fake.calls.clear()
    rt.update_available_resource()  # disturbed: no shortcut, full reads, still no writes
    assert fake.calls["get_provider"] == 1 and writes(fake) == 0


def test_children_that_leave_the_tree_are_deleted_and_the_root_reshaped(
        fake, cell_engine) -> None:
    tracker(fake, cell_engine, BIG).update_available_resource()
    assert len(fake.rps) == 4
    rt = tracker(fake, cell_engine, SMALL)  # the host restarted with a smaller shape
    rt.update_available_resource()
    (root,) = fake.rps.values()
    assert root["name"] == "cmp1"
    assert set(root["inventories"]) == {"VCPU", "MEMORY_MB", "DISK_GB"}


def test_a_disabled_service_marks_only_the_root_and_a_failure_is_reported_per_node(
        fake, cell_engine) -> None:
    with db.write(cell_engine) as conn:
        svc = services.get_by_host(conn, "cmp1", BINARY)
        services.update(conn, svc.id, disabled=True, disabled_reason="x")
    rt = tracker(fake, cell_engine, BIG)
    rt.update_available_resource()
    marked = {rp["name"] for rp in fake.rps.values()
              if "COMPUTE_STATUS_DISABLED" in rp["traits"]}
    assert marked == {"cmp1"}

    root = next(u for u, rp in fake.rps.items() if rp["parent"] is None)
    fake.races[root] = 99
    fake.rps[root]["traits"].discard("COMPUTE_NODE")  # drift to repair, against a racer
    fake.rps[root]["generation"] += 1
    report = rt.update_available_resource()
    assert report.synced == [] and "generation changed" in report.failed["cmp1"]
    with pytest.raises(SyncConflict):  # the synchronous path says so to its caller
        rt.set_disabled(False)
