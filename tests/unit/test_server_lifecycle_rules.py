"""The server lifecycle's pure parts: which states each action accepts (Nova's
check_instance_* decorators, in their order), the status a state pair shows and what a
status filter means, generated passwords, access addresses, the simulated guest's
transitions."""

from __future__ import annotations

import datetime as dt

import pytest

from stratus.api import passwords, status
from stratus.api.http.handlers.access_ips import access_ip
from stratus.api.ops import server_state
from stratus.api.store.errors import BadRequest, Conflict
from stratus.api.store.servers import Server
from stratus.cells import states as st
from stratus.compute.drivers import LibvirtDriver
from stratus.compute.drivers.guests import GuestActionFailed, InvalidGuestState
from stratus.compute.shapes import LibvirtShape


def server(vm: str = "active", task: str | None = None, *, host: str | None = "h",
           locked_by: str | None = None, launched: bool = True) -> Server:
    return Server("u", "n", "p", "u", vm, task, 1, host, host, None,
                  launched_at=dt.datetime(2026, 1, 1) if launched else None,
                  locked_by=locked_by)


@pytest.mark.parametrize(("rule", "vm", "task", "ok"), [
    ("reboot", "active", None, True),
    ("reboot", "stopped", None, False),
    ("reboot_hard", "stopped", None, True),
    ("reboot_hard", "active", "rebooting", True),      # a hard reboot may interrupt
    ("reboot_hard", "active", "powering-off", False),
    ("stop", "error", None, True),
    ("stop", "paused", None, False),
    ("start", "stopped", None, True),
    ("pause", "active", "image_snapshot", False),
    ("rescue", "error", None, True),
    ("unrescue", "rescued", None, True),
    ("createImage", "suspended", None, True),
    ("createImage", "rescued", None, False),
    ("restore", "soft-delete", None, True),
    ("restore", "active", None, False),
    ("trigger_crash_dump", "resized", None, True),
])
def test_each_action_accepts_novas_states(rule, vm, task, ok):
    if ok:
        server_state.check(server(vm, task), rule, is_admin=False)
    else:
        with pytest.raises(Conflict):
            server_state.check(server(vm, task), rule, is_admin=False)


def test_the_checks_come_in_novas_order_with_novas_words():
    locked = server("stopped", locked_by="owner")
    with pytest.raises(Conflict, match=r"^Instance u is locked$"):
        server_state.check(locked, "pause", is_admin=False)
    server_state.check(server("active", locked_by="admin"), "pause", is_admin=True)
    # A snapshot is not refused for a lock.
    server_state.check(locked, "createImage", is_admin=False)
    with pytest.raises(Conflict, match=r"^Instance u is not ready$"):
        server_state.check(server("active", host=None), "stop", is_admin=True)
    with pytest.raises(Conflict, match=r"^Cannot 'os-stop' instance u while it is in "
                                       r"vm_state paused$"):
        server_state.check(server("paused"), "stop", is_admin=True, action="os-stop")
    with pytest.raises(Conflict, match="in launched_at None"):
        server_state.check(server(launched=False), "stop", is_admin=True)
    # Deleting needs neither a host nor a launch.
    server_state.check(server("error", host=None, launched=False), "delete", is_admin=False)


@pytest.mark.parametrize(("vm", "task", "shown"), [
    ("active", "rebooting", "REBOOT"),
    ("active", "reboot_started_hard", "HARD_REBOOT"),
    ("active", "updating_password", "PASSWORD"),
    ("stopped", "rebuild_spawning", "REBUILD"),
    ("active", "powering-off", "ACTIVE"),
    ("soft-delete", None, "SOFT_DELETED"),
    ("rescued", "unrescuing", "RESCUE"),
    ("paused", "migrating", "MIGRATING"),
    ("nonsense", None, "UNKNOWN"),
])
def test_status_is_novas_state_map(vm, task, shown):
    assert status.status(vm, task) == shown


def test_a_status_filter_means_novas_states():
    vms, tasks = status.states_for(["REBOOT"])
    assert vms == ["active"] and set(tasks) == set(st.SOFT_REBOOT_TASKS)
    vms, tasks = status.states_for(["shutoff"])
    assert vms == ["stopped"] and tasks == ["default"]


def test_generated_passwords_have_every_group_and_no_misread_character():
    for length in (3, 12, 40):
        made = passwords.generate(length)
        assert len(made) == length
        for group in passwords.GROUPS:
            assert any(c in group for c in made)
        assert not set(made) & set("01IOl")


def test_access_addresses_are_checked_and_kept_canonical():
    assert access_ip("0000:0000:0000:0000:0000:babe:220.12.22.2", 6, "accessIPv6") == \
        "::babe:dc0c:1602"
    assert access_ip("192.0.2.1", 4, "accessIPv4") == "192.0.2.1"
    with pytest.raises(BadRequest, match="accessIPv4"):
        access_ip("::1", 4, "accessIPv4")
    with pytest.raises(BadRequest):
        access_ip("not-an-address", 6, "accessIPv6")


@pytest.fixture
def driver() -> LibvirtDriver:
    d = LibvirtDriver("h1", LibvirtShape("h1", vcpus=4, memory_mb=4096, disk_gb=40))
    root = d.provider_tree("h1").root.uuid
    d.spawn(_Instance("g1"), {root: {"resources": {"VCPU": 1, "DISK_GB": 2}}})
    return d


class _Instance:
    def __init__(self, uuid: str) -> None:
        self.uuid, self.name = uuid, uuid


def test_a_guest_goes_where_each_operation_takes_it(driver):
    assert driver.power_state("g1") == st.RUNNING
    driver.pause("g1")
    assert driver.power_state("g1") == st.POWER_PAUSED
    with pytest.raises(InvalidGuestState):
        driver.suspend("g1")                   # a paused guest cannot suspend
    driver.unpause("g1")
    driver.power_off("g1")
    with pytest.raises(InvalidGuestState):
        driver.reboot("g1", hard=False)        # a soft reboot needs it running
    driver.reboot("g1", hard=True)             # a hard one brings it back
    driver.rescue("g1", "img")
    assert driver.is_rescued("g1")
    driver.unrescue("g1")
    assert not driver.is_rescued("g1") and driver.diagnostics("g1")["boots"] == 4
    driver.snapshot_gb_per_second = 1.0        # its 2 GB disk copies in 2 s
    assert driver.copy_seconds("g1") == 2.0


def test_a_guest_operation_fails_on_command_and_changes_nothing(driver):
    driver.faults.fail_next_actions("suspend", 1, "no space for the memory image")
    with pytest.raises(GuestActionFailed, match="no space"):
        driver.suspend("g1")
    assert driver.power_state("g1") == st.RUNNING
    driver.suspend("g1")                       # only the next one failed
    assert driver.power_state("g1") == st.POWER_SUSPENDED


def test_the_console_is_tailed_as_novas_compute_tails_it(driver):
    whole = driver.console_output("g1")
    assert whole.endswith("login: \n")
    assert driver.console_output("g1", 2) == "instance-g1 login: \n"
    assert len(driver.console_output("g1", 3).split("\n")) == 3
    assert driver.console_output("g1", 0) == ""
