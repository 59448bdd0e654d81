"""Failure injection and hypervisor connection events."""

from __future__ import annotations

import pytest

from stratus.compute.drivers import (
    AUTO_DISABLE_PREFIX,
    HypervisorEvent,
    IronicDriver,
    LibvirtDriver,
    is_auto_disabled,
)
from stratus.compute.drivers import errors as e
from stratus.compute.drivers.base import Instance
from stratus.compute.shapes import BaremetalNodes, IronicShape, LibvirtShape

SHAPE = LibvirtShape("s", vcpus=4, memory_mb=4096, disk_gb=40)


@pytest.fixture
def driver() -> LibvirtDriver:
    return LibvirtDriver("cmp1", SHAPE)


def root(driver: LibvirtDriver) -> str:
    return driver.provider_tree("cmp1").root.uuid


def test_the_next_n_spawns_fail_and_leave_nothing_behind(driver: LibvirtDriver) -> None:
    driver.faults.fail_next_spawns(2, reason="disk image corrupt")
    for name in ("a", "b"):
        with pytest.raises(e.SpawnFailed, match="disk image corrupt") as info:
            driver.spawn(Instance(name), {root(driver): {"VCPU": 1}})
        assert info.value.instance_uuid == name
    assert driver.usage("cmp1") == {} and driver.instances() == []
    driver.spawn(Instance("c"), {root(driver): {"VCPU": 1}})
    assert driver.faults.pending == 0


def test_a_spawn_refused_before_reaching_the_hypervisor_does_not_use_up_a_failure(
    driver: LibvirtDriver,
) -> None:
    driver.faults.fail_next_spawns(1)
    with pytest.raises(e.InsufficientCapacity):
        driver.spawn(Instance("huge"), {root(driver): {"VCPU": 5}})
    assert driver.faults.pending == 1
    with pytest.raises(e.SpawnFailed):
        driver.spawn(Instance("a"), {root(driver): {"VCPU": 1}})


def test_spawns_of_matching_instances_fail_until_cleared(driver: LibvirtDriver) -> None:
    by_name = driver.faults.fail_spawns_matching("db-*", reason="no such image")
    driver.faults.fail_spawns_matching(lambda inst: inst.uuid.endswith("-7"), reason="unlucky")
    with pytest.raises(e.SpawnFailed, match="no such image"):
        driver.spawn(Instance("u1", "db-1"), {root(driver): {"VCPU": 1}})
    with pytest.raises(e.SpawnFailed, match="unlucky"):
        driver.spawn(Instance("u-7", "web"), {root(driver): {"VCPU": 1}})
    driver.spawn(Instance("u2", "web-1"), {root(driver): {"VCPU": 1}})
    driver.faults.clear(by_name)
    driver.spawn(Instance("u1", "db-1"), {root(driver): {"VCPU": 1}})
    with pytest.raises(e.SpawnFailed, match="unlucky"):
        driver.spawn(Instance("x-7"), {root(driver): {"VCPU": 1}})
    driver.faults.clear()
    driver.spawn(Instance("x-7"), {root(driver): {"VCPU": 1}})


def test_a_rule_match_does_not_use_up_a_next_failure(driver: LibvirtDriver) -> None:
    driver.faults.fail_spawns_matching("bad", reason="rule")
    driver.faults.fail_next_spawns(1, reason="next")
    with pytest.raises(e.SpawnFailed, match="rule"):
        driver.spawn(Instance("bad"), {root(driver): {"VCPU": 1}})
    with pytest.raises(e.SpawnFailed, match="next"):
        driver.spawn(Instance("good"), {root(driver): {"VCPU": 1}})


def test_losing_the_hypervisor_emits_one_auto_disable_event(driver: LibvirtDriver) -> None:
    events: list[HypervisorEvent] = []
    driver.subscribe(events.append)
    driver.lose_connection("socket closed")
    driver.lose_connection("again")  # already lost: no second event
    assert [ev.kind for ev in events] == ["connection_lost"]
    lost = events[0]
    assert (lost.host, lost.hypervisor, lost.reason) == ("cmp1", "libvirt", "socket closed")
    assert lost.disable_reason == "AUTO: Connection to libvirt lost: socket closed"
    assert is_auto_disabled(lost.disable_reason)
    assert not driver.connected
    driver.restore_connection()
    driver.restore_connection()
    assert [ev.kind for ev in events] == ["connection_lost", "connection_restored"]
    assert events[1].disable_reason is None and driver.connected


def test_only_a_driver_disable_counts_as_automatic() -> None:
    assert AUTO_DISABLE_PREFIX == "AUTO: "
    assert not is_auto_disabled("maintenance window")
    assert not is_auto_disabled(None) and not is_auto_disabled("")


def test_while_disconnected_the_hypervisor_answers_nothing_but_instances_survive(
    driver: LibvirtDriver,
) -> None:
    rp = root(driver)
    driver.spawn(Instance("running"), {rp: {"VCPU": 2}})
    driver.lose_connection("libvirtd restarted")
    for call in (driver.get_available_nodes, lambda: driver.provider_tree("cmp1"),
                 lambda: driver.spawn(Instance("new"), {rp: {"VCPU": 1}}),
                 lambda: driver.destroy("running"), lambda: driver.usage("cmp1"),
                 driver.instances):
        with pytest.raises(e.HypervisorUnavailable, match="libvirtd restarted"):
            call()
    driver.restore_connection()
    assert [p.instance.uuid for p in driver.instances()] == ["running"]
    assert driver.usage("cmp1") == {rp: {"VCPU": 2}}


def test_listeners_may_call_back_and_one_failing_listener_hides_nothing(
    driver: LibvirtDriver,
) -> None:
    seen: list[object] = []

    def broken(event: HypervisorEvent) -> None:
        raise RuntimeError("listener bug")

    def reentrant(event: HypervisorEvent) -> None:
        seen.append(driver.get_available_nodes() if driver.connected else event.kind)

    driver.subscribe(broken)
    unsubscribe = driver.subscribe(reentrant)
    driver.lose_connection()
    driver.restore_connection()
    assert seen == ["connection_lost", ["cmp1"]]
    unsubscribe()
    driver.lose_connection()
    assert len(seen) == 2


def test_ironic_reports_its_own_hypervisor_name() -> None:
    driver = IronicDriver("ir1", IronicShape("m", (BaremetalNodes(1, "baremetal-x"),)))
    events: list[HypervisorEvent] = []
    driver.subscribe(events.append)
    driver.lose_connection("API down")
    assert events[0].disable_reason == "AUTO: Connection to ironic lost: API down"
    with pytest.raises(e.HypervisorUnavailable):
        driver.set_maintenance("ir1-node-0", True)
