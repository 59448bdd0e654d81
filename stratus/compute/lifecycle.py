"""The compute's side of the server actions that stay on the host: reboot, stop, start,
pause, unpause, suspend, resume, rescue, unrescue, rebuild in place, soft delete and
restore, trigger crash dump (casts, as Nova's), console output and diagnostics
(calls). The snapshot is :mod:`stratus.compute.snapshot`'s.

Every cast finds the task state the API set (Nova's sequence: ``rebooting`` then
``reboot_pending``, ``reboot_started``...); one that finds the server in any other
task does nothing, so a message delivered twice (the bus delivers at least once) is
harmless, and so is one that arrives after the server was deleted. Each transition is
a compare-and-swap on the task state, the step is an instance action event
(``compute_<action>_instance``), and a guest that is already where the action would
put it (a repeat after a crash between the hypervisor and the record) is only
recorded. A failure leaves the guest as it was and the task cleared, with the reason
as the server's fault and the event's; a failed reboot or rebuild puts the server in
ERROR, as Nova does.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stratus.cells import states as st
from stratus.compute import records as cr
from stratus.compute.drivers.errors import DriverError

if TYPE_CHECKING:
    from stratus.compute.drivers import Driver

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Op:
    """One host action: the instance action it belongs to, its event, the task states it
    goes through (the API's first), where it leaves the server, and whether a failure
    puts the server in ERROR."""

    action: str
    event: str
    tasks: tuple[str, ...]
    vm_state: str
    power_state: int
    error_on_failure: bool = False


OPS = {
    "reboot_soft": Op("reboot", "compute_reboot_instance", st.SOFT_REBOOT_TASKS, st.ACTIVE,
                      st.RUNNING, error_on_failure=True),
    "reboot_hard": Op("reboot", "compute_reboot_instance", st.HARD_REBOOT_TASKS, st.ACTIVE,
                      st.RUNNING, error_on_failure=True),
    "stop": Op("stop", "compute_stop_instance", (st.POWERING_OFF,), st.STOPPED,
               st.SHUTDOWN),
    "start": Op("start", "compute_start_instance", (st.POWERING_ON,), st.ACTIVE, st.RUNNING),
    "pause": Op("pause", "compute_pause_instance", (st.PAUSING,), st.PAUSED,
                st.POWER_PAUSED),
    "unpause": Op("unpause", "compute_unpause_instance", (st.UNPAUSING,), st.ACTIVE,
                  st.RUNNING),
    "suspend": Op("suspend", "compute_suspend_instance", (st.SUSPENDING,), st.SUSPENDED,
                  st.POWER_SUSPENDED),
    "resume": Op("resume", "compute_resume_instance", (st.RESUMING,), st.ACTIVE,
                 st.RUNNING),
    "rescue": Op("rescue", "compute_rescue_instance", (st.RESCUING,), st.RESCUED,
                 st.RUNNING),
    "unrescue": Op("unrescue", "compute_unrescue_instance", (st.UNRESCUING,), st.ACTIVE,
                   st.RUNNING),
    "rebuild": Op("rebuild", "compute_rebuild_instance", st.REBUILD_TASKS, st.ACTIVE,
                  st.RUNNING, error_on_failure=True),
    "soft_delete": Op("delete", "compute_soft_delete_instance", (st.SOFT_DELETING,),
                      st.SOFT_DELETED, st.SHUTDOWN),
    "restore": Op("restore", "compute_restore_instance", (st.RESTORING,), st.ACTIVE,
                  st.RUNNING),
    "change_password": Op("changePassword", "compute_set_admin_password",
                          (st.UPDATING_PASSWORD,), st.ACTIVE, st.RUNNING),
}


class LifecycleSteps:
    host: str
    driver: Driver
    records: cr.CellRecords
    clock: Callable[[], dt.datetime]

    # ---- the shared sequence --------------------------------------------------------

    def _set(self, uuid: str, expect: Sequence[str | None], **values: Any) -> bool:
        values.setdefault("updated_at", self.clock())
        return self.records.advance(uuid, self.host, expect, values)

    def _run(self, uuid: str, op: Op, work: Callable[[], None],
             done: Callable[[], bool] | None = None, **end: Any) -> bool:
        """Step the server through ``op``'s task states, doing ``work`` on the hypervisor
        (skipped when ``done`` says the guest is there already); True if it ended well."""
        with cr.step(self.records, uuid, op.action, op.event, self.host) as step:
            # Into the action's own next task state (from whichever of its states the
            # API or an earlier delivery left): a server in any other task is not ours.
            current = op.tasks[0]
            for task in op.tasks[1:] or op.tasks:
                if not self._set(uuid, op.tasks, task_state=task):
                    LOG.info("%s: %s of %s ignored: the server is gone, elsewhere or in "
                             "another task", self.host, op.event, uuid)
                    step.ignore()
                    return False
                current = task
            try:
                if done is None or not done():
                    work()
            except DriverError as exc:
                self._failed(uuid, op, current, str(exc))
                step.fail(str(exc))
                return False
            except Exception as exc:
                LOG.exception("%s: %s of %s failed", self.host, op.event, uuid)
                self._failed(uuid, op, current, str(exc) or type(exc).__name__)
                step.fail(str(exc) or type(exc).__name__)
                return False
            self._set(uuid, (current,), vm_state=op.vm_state, task_state=None,
                      power_state=op.power_state, **end)
        LOG.info("%s: %s of %s done", self.host, op.action, uuid)
        return True

    def _failed(self, uuid: str, op: Op, current: str, reason: str) -> None:
        LOG.warning("%s: %s of %s failed: %s", self.host, op.action, uuid, reason)
        values: dict[str, Any] = {"task_state": None, "fault": f"{op.action}: {reason}"}
        if op.error_on_failure:
            values["vm_state"] = st.ERROR
        try:
            values["power_state"] = self.driver.power_state(uuid)
        except DriverError:
            values["power_state"] = st.NOSTATE
        self._set(uuid, (current,), **values)

    def _power_is(self, uuid: str, *power: int) -> Callable[[], bool]:
        def check() -> bool:
            try:
                return self.driver.power_state(uuid) in power
            except DriverError:
                return False
        return check

    # ---- ComputeRPC 1.5 ------------------------------------------------------------------

    def reboot_instance(self, instance_uuid: str, reboot_type: str) -> None:
        hard = reboot_type.upper() == "HARD"
        self._run(instance_uuid, OPS["reboot_hard" if hard else "reboot_soft"],
                  lambda: self.driver.reboot(instance_uuid, hard), fault=None)

    def stop_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["stop"], lambda: self.driver.power_off(instance_uuid),
                  self._power_is(instance_uuid, st.SHUTDOWN))

    def start_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["start"], lambda: self.driver.power_on(instance_uuid),
                  self._power_is(instance_uuid, st.RUNNING), fault=None)

    def pause_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["pause"], lambda: self.driver.pause(instance_uuid),
                  self._power_is(instance_uuid, st.POWER_PAUSED))

    def unpause_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["unpause"], lambda: self.driver.unpause(instance_uuid),
                  self._power_is(instance_uuid, st.RUNNING))

    def suspend_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["suspend"], lambda: self.driver.suspend(instance_uuid),
                  self._power_is(instance_uuid, st.POWER_SUSPENDED))

    def resume_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["resume"], lambda: self.driver.resume(instance_uuid),
                  self._power_is(instance_uuid, st.RUNNING))

    def rescue_instance(self, instance_uuid: str, rescue_image_ref: str | None = None
                        ) -> None:
        self._run(instance_uuid, OPS["rescue"],
                  lambda: self.driver.rescue(instance_uuid, rescue_image_ref),
                  lambda: self.driver.is_rescued(instance_uuid))

    def unrescue_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["unrescue"],
                  lambda: self.driver.unrescue(instance_uuid),
                  lambda: not self.driver.is_rescued(instance_uuid))

    def rebuild_in_place(self, instance_uuid: str, image_ref: str | None,
                         stopped: bool = False) -> None:
        """Write the image on the server's disk and boot it; a server that was stopped
        is powered off again afterwards, as Nova leaves it."""
        def work() -> None:
            self.driver.rebuild(instance_uuid, image_ref)
            if stopped:
                self.driver.power_off(instance_uuid)

        end: dict[str, Any] = {"fault": None, "launched_at": self.clock()}
        op = OPS["rebuild"]
        if stopped:
            op = Op(op.action, op.event, op.tasks, st.STOPPED, st.SHUTDOWN, True)
        self._run(instance_uuid, op, work, **end)

    def soft_delete_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["soft_delete"],
                  lambda: self.driver.power_off(instance_uuid),
                  self._power_is(instance_uuid, st.SHUTDOWN))

    def restore_instance(self, instance_uuid: str) -> None:
        self._run(instance_uuid, OPS["restore"], lambda: self.driver.power_on(instance_uuid),
                  self._power_is(instance_uuid, st.RUNNING))

    def set_admin_password(self, instance_uuid: str, new_pass: str) -> None:
        """The guest agent sets it (the password is not kept anywhere)."""
        self._run(instance_uuid, OPS["change_password"],
                  lambda: self.driver.set_admin_password(instance_uuid, new_pass))

    def inject_network_info(self, instance_uuid: str) -> None:
        """The guest's network configuration written again (no task, no event: Nova's)."""
        try:
            self.driver.inject_network_info(instance_uuid)
        except DriverError as exc:
            LOG.warning("%s: network info of %s not injected: %s", self.host,
                        instance_uuid, exc)

    def trigger_crash_dump(self, instance_uuid: str) -> None:
        """No task state (Nova sets none); the event records how it went."""
        with cr.step(self.records, instance_uuid, "trigger_crash_dump",
                     "compute_trigger_crash_dump", self.host) as step:
            try:
                self.driver.trigger_crash_dump(instance_uuid)
            except DriverError as exc:
                step.fail(str(exc))
                return
        self._set(instance_uuid, (None,), power_state=self.driver.power_state(instance_uuid))

    def get_console_output(self, instance_uuid: str, tail_length: int | None = None) -> str:
        return self.driver.console_output(instance_uuid, tail_length)

    def get_diagnostics(self, instance_uuid: str) -> dict[str, Any]:
        return self.driver.diagnostics(instance_uuid)
