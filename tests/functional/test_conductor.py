"""The conductor's build task end to end, in one process: the in-process bus, an in-process
Placement, the scheduler service, and real compute services on simulated libvirt hosts
(failures injected into their drivers)."""

from __future__ import annotations

import collections
import uuid as uuidlib
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from stratus.api import schema as api
from stratus.api.store import decisions
from stratus.api.store import servers as server_store
from stratus.bus import Bus
from stratus.cells import mappings
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.compute.drivers import LibvirtDriver
from stratus.compute.service import ComputeService
from stratus.compute.shapes import LibvirtShape
from stratus.conductor import records
from stratus.conductor.build import BuildTask, ConductorContext
from stratus.conductor.manager import CellBuses, ConductorManager
from stratus.conductor.rpcapi import ConductorRPC
from stratus.scheduler.rpcapi import SchedulerRPC
from stratus.storage import engine as db
from tests.scheduler_world import Cloud, spec
from tests.waiting import eventually


class Plane:
    """Scheduler, conductor and computes on one in-process bus."""

    def __init__(self, tmp_path: Any, placement_app: Any, database_url: str) -> None:
        self.cloud = Cloud(tmp_path, placement_app, database_url, cells=("cell1", "cell2"))
        self.bus = Bus(f"inproc://conductor-test-{uuidlib.uuid4().hex}", identity="test",
                       timeout=30)
        scheduler = self.cloud.scheduler(placement=self.cloud.client(), max_attempts=3)
        self.bus.serve(SchedulerRPC, scheduler, server="scheduler-1")
        self.buses = CellBuses(self.bus)
        ctx = ConductorContext(api_engine=self.cloud.api_engine, engines=self.cloud.engines,
                               placement=self.cloud.client(),
                               scheduler=self.bus.client(SchedulerRPC),
                               compute=self.buses.compute_client, max_attempts=3)
        self.ctx = ctx
        self.bus.serve(ConductorRPC, ConductorManager(ctx), server="conductor-1")
        self.conductor = self.bus.client(ConductorRPC)
        self.computes: dict[str, ComputeService] = {}

    def add_compute(self, name: str, memory_mb: int, cell: str = "cell1") -> ComputeService:
        cell_uuid = self.cloud.cells[cell].uuid
        driver = LibvirtDriver(name, LibvirtShape(name, vcpus=4, memory_mb=memory_mb,
                                                  disk_gb=100),
                               aggregates=[cell_aggregate_uuid(cell_uuid)])
        svc = ComputeService(name, driver, self.bus, self.cloud.cell_engine(cell),
                             self.cloud.client(), report_interval=3600, tracker_interval=3600)
        svc.start()
        with db.write(self.cloud.api_engine) as conn:
            mappings.map_host(conn, name, cell_uuid)
        self.computes[name] = svc
        return svc

    def build(self, names: list[str], **spec_kw: Any) -> list[str]:
        instances = [{"uuid": str(uuidlib.uuid4()), "name": n, "project_id": "proj",
                      "user_id": "user"} for n in names]
        self.conductor.cast("build_instances", instances=instances,
                            request_spec=spec(**spec_kw))
        return [i["uuid"] for i in instances]

    def instance(self, uuid: str) -> tuple[str, dict[str, Any]] | None:
        """(cell name, record) of an instance, wherever it is."""
        for name in ("cell0", *self.cloud.cells):
            with db.read(self.cloud.cell_engine(name)) as conn:
                record = records.get_instance(conn, uuid)
            if record is not None:
                return name, record
        return None

    def settled(self, uuid: str) -> tuple[str, dict[str, Any]]:
        def done() -> Any:
            found = self.instance(uuid)
            return found if found and found[1]["vm_state"] in ("active", "error") else None

        found = eventually(done)
        assert found, f"instance {uuid} did not settle: {self.instance(uuid)}"
        return found

    def allocated_roots(self, uuid: str) -> set[str]:
        return set(self.cloud.placement.get_allocations(uuid)["allocations"])

    def root(self, host: str) -> str:
        return self.computes[host].driver.provider_tree(host).root.uuid

    def mapped_cell(self, uuid: str) -> str | None:
        with db.read(self.cloud.api_engine) as conn:
            cell = records.cell_of_instance(conn, uuid)
        return cell.name if cell else None

    def close(self) -> None:
        for svc in self.computes.values():
            svc.stop()
        self.bus.close()
        self.buses.close()
        self.cloud.close()


@pytest.fixture
def plane(tmp_path, placement_app, database_url):
    p = Plane(tmp_path, placement_app, database_url)
    yield p
    p.close()


@pytest.fixture
def three_hosts(plane):
    # Different RAM, so the RAM weigher's order is known: big, then mid, then small.
    for name, memory in (("big", 16384), ("mid", 12288), ("small", 8192)):
        plane.add_compute(name, memory)
    return plane


def test_build_lands_on_the_best_host_with_its_claim(three_hosts):
    plane = three_hosts
    [uuid] = plane.build(["vm1"])
    cell, record = plane.settled(uuid)
    assert (cell, record["vm_state"], record["host"]) == ("cell1", "active", "big")
    assert plane.mapped_cell(uuid) == "cell1"
    assert plane.allocated_roots(uuid) == {plane.root("big")}
    assert [p.instance.uuid for p in plane.computes["big"].driver.instances()] == [uuid]


def test_several_instances_are_built_and_their_build_requests_go(three_hosts):
    plane = three_hosts
    names = ["a", "b", "c"]
    uuids = [str(uuidlib.uuid4()) for _ in names]
    with db.write(plane.cloud.api_engine) as conn:   # as the API accepts them
        server_store.create_build_requests(conn, [
            {"uuid": u, "project_id": "proj", "user_id": "user", "name": n}
            for u, n in zip(uuids, names, strict=True)], spec())
    plane.conductor.cast("build_instances", request_spec=spec(), instances=[
        {"uuid": u, "name": n, "project_id": "proj", "user_id": "user"}
        for u, n in zip(uuids, names, strict=True)])
    hosts = [plane.settled(u)[1]["host"] for u in uuids]
    assert sorted(hosts) == ["big", "mid", "small"]
    for u, host in zip(uuids, hosts, strict=True):
        assert plane.allocated_roots(u) == {plane.root(host)}
    with db.read(plane.cloud.api_engine) as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(api.build_requests)
                            ).scalar_one() == 0


def test_failed_spawn_is_rescheduled_onto_the_next_alternate_with_its_claim(three_hosts):
    plane = three_hosts
    plane.computes["big"].driver.faults.fail_spawns_matching("flaky*", reason="disk on fire")
    [uuid] = plane.build(["flaky-1"])
    cell, record = plane.settled(uuid)
    assert (cell, record["vm_state"], record["host"]) == ("cell1", "active", "mid")
    # The claim moved: nothing left on the host that failed.
    assert plane.allocated_roots(uuid) == {plane.root("mid")}
    assert plane.cloud.placement.usages(plane.root("big")).get("VCPU", 0) == 0


def test_after_max_attempts_the_instance_is_in_error_with_every_reason(three_hosts):
    plane = three_hosts
    spare = plane.add_compute("spare", 4096)   # a 4th host: never tried (max_attempts=3)
    for name in ("big", "mid", "small"):
        plane.computes[name].driver.faults.fail_spawns_matching(
            "doomed*", reason=f"{name} hypervisor refused")
    [uuid] = plane.build(["doomed-1"])
    cell, record = plane.settled(uuid)
    assert (cell, record["vm_state"]) == ("cell1", "error")
    attempts = record["fault"].split("Attempts: ")[1].split("; ")
    assert [a.split(":")[0] for a in attempts] == ["big", "mid", "small"]
    for name, attempt in zip(("big", "mid", "small"), attempts, strict=True):
        assert attempt.endswith(f"{name} hypervisor refused")
    assert "maximum number of attempts (3)" in record["fault"]
    assert plane.cloud.placement.get_allocations(uuid)["allocations"] == {}
    assert spare.driver.instances() == []


def test_no_valid_host_buries_the_instance_in_cell0_with_the_reason(three_hosts):
    plane = three_hosts
    [uuid] = plane.build(["huge"], vcpus=64)
    cell, record = plane.settled(uuid)
    assert (cell, record["vm_state"], record["host"]) == ("cell0", "error", None)
    assert "No valid host was found" in record["fault"]
    assert "3 hosts considered: 3 lack VCPU (largest free on an eligible host: " \
        in record["fault"]
    # The record is written first, then the mapping (as the API expects to find them).
    assert eventually(lambda: plane.mapped_cell(uuid) == "cell0")
    assert plane.cloud.placement.get_allocations(uuid)["allocations"] == {}


def test_builds_never_go_to_a_disabled_cell(plane):
    plane.add_compute("one", 8192, cell="cell1")
    plane.add_compute("two", 65536, cell="cell2")   # the RAM weigher's favourite
    plane.cloud.set_cell_disabled("cell2", True)
    plane.cloud.cache.request_refresh()
    uuids = plane.build(["x", "y", "z"])
    for u in uuids:
        cell, record = plane.settled(u)
        assert (cell, record["vm_state"], record["host"]) == ("cell1", "active", "one")


def test_a_server_deleted_before_hand_over_keeps_no_claim_and_no_record(three_hosts):
    """The API deleted the server (mapping queued for delete) while it was being scheduled:
    the conductor releases the claim and creates nothing, rather than resurrecting it."""
    plane = three_hosts
    uuid = str(uuidlib.uuid4())
    with db.write(plane.cloud.api_engine) as conn:
        conn.execute(sa.insert(api.instance_mappings).values(
            instance_uuid=uuid, project_id="proj", user_id="user", queued_for_delete=True,
            created_at=records.utcnow()))
    task = BuildTask(plane.ctx, [{"uuid": uuid, "name": "gone", "project_id": "proj",
                                  "user_id": "user"}], spec())
    task.execute()
    assert (task.built, task.buried) == ([], [])
    assert plane.instance(uuid) is None
    assert plane.cloud.placement.get_allocations(uuid)["allocations"] == {}
    assert all(not svc.driver.instances() for svc in plane.computes.values())


def test_a_build_writes_the_api_database_twice_and_records_its_decision(three_hosts,
                                                                        monkeypatch):
    """A boot the API accepted (mapping, build request and spec written together) costs
    the conductor two transactions of the API database: one before scheduling (the
    build's lease, its records, its ports) and the hand-over to the cell, which records
    the scheduler's decision too. The cell's mapping comes from the cache."""
    plane = three_hosts
    ctx = replace(plane.ctx, cells=plane.cloud.cache)
    uuid = str(uuidlib.uuid4())
    instance = {"uuid": uuid, "name": "counted", "project_id": "proj", "user_id": "user"}
    with db.write(plane.cloud.api_engine) as conn:
        server_store.create_build_requests(conn, [instance], spec())
    plane.cloud.cache.all()   # loaded before the build, as a running conductor has it
    opened: collections.Counter[str] = collections.Counter()
    for kind in ("read", "write"):
        real = getattr(db, kind)

        def counted(engine: Any, *, kind: str = kind, real: Any = real) -> Any:
            if engine is plane.cloud.api_engine:
                opened[kind] += 1
            return real(engine)

        monkeypatch.setattr(db, kind, counted)
    task = BuildTask(ctx, [instance], spec())
    task.execute()
    monkeypatch.undo()
    assert task.built == [uuid]
    # (The one read is the scheduler's, of the aggregates.)
    assert opened["write"] == 2 and opened["read"] <= 1, opened
    assert plane.settled(uuid)[0] == "cell1" and plane.mapped_cell(uuid) == "cell1"
    with db.read(plane.cloud.api_engine) as conn:
        [decision] = decisions.recent(conn)
    assert (decision.instance_uuid, decision.outcome, decision.hosts) == (
        uuid, decisions.CHOSEN, ["big"])


def test_a_server_no_host_takes_has_its_decision_recorded_with_its_burial(three_hosts):
    plane = three_hosts
    [uuid] = plane.build(["huge"], vcpus=64)
    assert eventually(lambda: plane.mapped_cell(uuid) == "cell0")
    with db.read(plane.cloud.api_engine) as conn:
        [decision] = decisions.recent(conn)
    assert (decision.instance_uuid, decision.outcome) == (uuid, decisions.NO_VALID_HOST)
    assert "No valid host was found" in str(decision.reason)


def test_the_conductors_cached_cells_take_a_new_cell_and_a_changed_one(plane):
    """A cell the cache does not know is read again at once; a changed one after SIGHUP
    (``request_refresh``) or the refresh interval, as the scheduler's."""
    cache = plane.cloud.cache
    ctx = replace(plane.ctx, cells=cache)
    assert ctx.cell(plane.cloud.cells["cell1"].uuid).name == "cell1"
    with db.write(plane.cloud.api_engine) as conn:
        added = mappings.create_cell(conn, "cell3", "inproc://cell3", "sqlite://")
    assert ctx.cell(added.uuid) == added
    with db.write(plane.cloud.api_engine) as conn:
        mappings.update_cell(conn, added.uuid, transport_url="inproc://moved")
    cache.request_refresh()
    assert ctx.cell(added.uuid).transport_url == "inproc://moved"
    with pytest.raises(mappings.CellNotFound):
        ctx.cell(str(uuidlib.uuid4()))
