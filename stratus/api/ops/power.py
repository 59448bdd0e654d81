"""The actions a server's own compute carries out (Nova's compute API casts them straight
to the compute): reboot, stop, start, pause, unpause, suspend, resume, rescue, unrescue,
trigger crash dump. Each checks the server's states, wins its task with its instance
action, and casts (``stratus.compute.lifecycle`` does the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from stratus.api.deps import ComputeAPIDeps
from stratus.api.ops import server_state
from stratus.api.ops import servers as server_ops
from stratus.cells import states as st
from stratus.cells.actions import Caller


@dataclass(frozen=True)
class HostAction:
    rule: str           # its key in stratus.cells.states.ACCEPTS
    action: str         # the instance action (Nova's name)
    task: str | None    # the task state the API sets
    method: str         # the ComputeRPC cast


HOST_ACTIONS = {
    "reboot_soft": HostAction("reboot", "reboot", st.REBOOTING, "reboot_instance"),
    "reboot_hard": HostAction("reboot_hard", "reboot", st.REBOOTING_HARD, "reboot_instance"),
    "stop": HostAction("stop", "stop", st.POWERING_OFF, "stop_instance"),
    "start": HostAction("start", "start", st.POWERING_ON, "start_instance"),
    "pause": HostAction("pause", "pause", st.PAUSING, "pause_instance"),
    "unpause": HostAction("unpause", "unpause", st.UNPAUSING, "unpause_instance"),
    "suspend": HostAction("suspend", "suspend", st.SUSPENDING, "suspend_instance"),
    "resume": HostAction("resume", "resume", st.RESUMING, "resume_instance"),
    "rescue": HostAction("rescue", "rescue", st.RESCUING, "rescue_instance"),
    "unrescue": HostAction("unrescue", "unrescue", st.UNRESCUING, "unrescue_instance"),
    "trigger_crash_dump": HostAction("trigger_crash_dump", "trigger_crash_dump", None,
                                     "trigger_crash_dump"),
}


def act(api: ComputeAPIDeps, uuid: str, project_id: str | None, name: str, caller: Caller,
        *, is_admin: bool, shown: str | None = None, **args: object) -> None:
    """Start host action ``name`` on the server (``project_id``: the owner, None for an
    admin); ``shown`` is the action's name in a conflict's message."""
    todo = HOST_ACTIONS[name]
    server = server_ops.get(api, uuid, project_id)
    server_state.check(server, todo.rule, is_admin=is_admin, action=shown or todo.action)
    server_state.check_compute(api, server, shown or todo.action)
    server_state.win(api, server, todo.rule, todo.action, caller, task_state=todo.task,
                     action_name=shown)
    if name == "reboot_soft" or name == "reboot_hard":
        args["reboot_type"] = "HARD" if name == "reboot_hard" else "SOFT"
    server_state.cast(api, server, todo.action, todo.method,
                      {"task_state": server.task_state}, **args)


def reboot(api: ComputeAPIDeps, uuid: str, project_id: str | None, hard: bool,
           caller: Caller, *, is_admin: bool) -> None:
    act(api, uuid, project_id, "reboot_hard" if hard else "reboot_soft", caller,
        is_admin=is_admin)


def rescue(api: ComputeAPIDeps, uuid: str, project_id: str | None, image_ref: str | None,
           caller: Caller, *, is_admin: bool) -> None:
    act(api, uuid, project_id, "rescue", caller, is_admin=is_admin,
        rescue_image_ref=image_ref)
