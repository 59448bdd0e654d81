"""A server's API status from its vm_state and task_state (Nova's state map,
``nova/api/openstack/common.py``), and back: the states a status filter means."""

from __future__ import annotations

from stratus.cells import moves
from stratus.cells import states as st

_RESIZING = {t: "RESIZE" for t in (moves.RESIZE_PREP, moves.RESIZE_MIGRATING,
                                   moves.RESIZE_MIGRATED, "resize_finish")}
_REBUILDING = {t: "REBUILD" for t in st.REBUILD_TASKS}
DEFAULT = "default"

STATE_MAP: dict[str, dict[str, str]] = {
    st.ACTIVE: {DEFAULT: "ACTIVE",
                **{t: "REBOOT" for t in st.SOFT_REBOOT_TASKS},
                **{t: "HARD_REBOOT" for t in st.HARD_REBOOT_TASKS},
                "updating_password": "PASSWORD", **_REBUILDING,
                moves.LIVE_MIGRATING: "MIGRATING", **_RESIZING},
    st.BUILDING: {DEFAULT: "BUILD"},
    st.STOPPED: {DEFAULT: "SHUTOFF", **_RESIZING, **_REBUILDING},
    st.RESIZED: {DEFAULT: "VERIFY_RESIZE", moves.RESIZE_REVERTING: "REVERT_RESIZE"},
    st.PAUSED: {DEFAULT: "PAUSED", moves.LIVE_MIGRATING: "MIGRATING"},
    st.SUSPENDED: {DEFAULT: "SUSPENDED"},
    st.RESCUED: {DEFAULT: "RESCUE"},
    st.ERROR: {DEFAULT: "ERROR", **_REBUILDING},
    st.DELETED: {DEFAULT: "DELETED"},
    st.SOFT_DELETED: {DEFAULT: "SOFT_DELETED"},
    st.SHELVED: {DEFAULT: "SHELVED"},
    st.SHELVED_OFFLOADED: {DEFAULT: "SHELVED_OFFLOADED"},
}


def status(vm_state: str, task_state: str | None) -> str:
    tasks = STATE_MAP.get(vm_state, {DEFAULT: "UNKNOWN"})
    return tasks.get(task_state or DEFAULT, tasks[DEFAULT])


def states_for(statuses: list[str]) -> tuple[list[str], list[str]]:
    """(vm_states, task_states) a status filter means (Nova's
    ``task_and_vm_state_from_status``; ``default`` among the task states: any task)."""
    wanted = {x.lower() for x in statuses}
    vm, task = set(), set()
    for vm_state, tasks in STATE_MAP.items():
        for task_state, shown in tasks.items():
            if shown.lower() in wanted:
                vm.add(vm_state)
                task.add(task_state)
    return sorted(vm), sorted(task)
