"""What a simulated guest does between its spawn and its destroy: power (stop, start,
reboot), pause, suspend, rescue, rebuild, a snapshot of its disk, its console log and
its diagnostics. The :class:`~stratus.compute.drivers.base.Driver` mixes this in; its
books (what an instance holds) do not change here: a stopped, paused, suspended or
rescued guest keeps its resources on its host, as it does in Nova.

Each operation refuses a guest in a state a real hypervisor could not act on
(:class:`InvalidGuestState`), and fails on command (``faults.fail_next_actions``),
leaving the guest as it was.

Power states are Nova's (``nova.compute.power_state``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from stratus.compute.drivers import errors
from stratus.compute.drivers.faults import FaultInjector

NOSTATE, RUNNING, PAUSED, SHUTDOWN, CRASHED, SUSPENDED = 0, 1, 3, 4, 6, 7
STATE_NAMES = {NOSTATE: "pending", RUNNING: "running", PAUSED: "paused",
               SHUTDOWN: "shutdown", CRASHED: "crashed", SUSPENDED: "suspended"}
MAX_CONSOLE_LINES = 1000


class InvalidGuestState(errors.DriverError):
    """The guest is not in a state this operation can start from."""


class GuestActionFailed(errors.DriverError):
    """The hypervisor failed the operation (injected); the guest is as it was."""

    def __init__(self, instance_uuid: str, action: str, reason: str) -> None:
        super().__init__(instance_uuid, action, reason)
        self.instance_uuid, self.action, self.reason = instance_uuid, action, reason

    def __str__(self) -> str:
        return f"{self.action} of instance {self.instance_uuid} failed: {self.reason}"


@dataclass
class Guest:
    """A guest's own state on the hypervisor."""

    uuid: str
    power: int = RUNNING
    rescued: bool = False
    image_ref: str | None = None
    boots: int = 1
    started_at: float = field(default_factory=time.time)
    console: list[str] = field(default_factory=list)

    def log(self, *lines: str) -> None:
        self.console.extend(lines)
        del self.console[:-MAX_CONSOLE_LINES]

    def boot_lines(self, note: str = "") -> None:
        self.started_at = time.time()
        name = f"instance-{self.uuid[:8]}"
        self.log(f"[    0.000000] Linux version 6.1.0-stratus (simulated guest){note}",
                 f"[    0.412345] Booting {name} (boot {self.boots})",
                 "[    1.234567] cloud-init: datasource found", f"{name} login: ")


class GuestLifecycle:
    """Mixed into Driver: ``_lock``, ``_instances``, ``host``, ``faults`` are the driver's."""

    host: str
    faults: FaultInjector
    _lock: threading.RLock
    _instances: dict[str, Any]
    _guests: dict[str, Guest]

    def _guest(self, uuid: str) -> Guest:
        """The running-set instance's guest (the lock is held)."""
        self._require_connection()
        if uuid not in self._instances:
            self._guests.pop(uuid, None)
            raise errors.InstanceNotFound(f"instance {uuid} is not on {self.host}")
        guest = self._guests.get(uuid)
        if guest is None:
            guest = self._guests[uuid] = Guest(uuid)
            guest.boot_lines()
        return guest

    def _require_connection(self) -> None:
        raise NotImplementedError   # the Driver's

    def _act(self, uuid: str, action: str, allowed: tuple[int, ...],
             rescued: bool | None = False) -> Guest:
        """The guest, once it is in one of ``allowed`` power states (and rescued or not, as
        ``rescued`` says; None: either) and no failure is injected for ``action``."""
        guest = self._guest(uuid)
        if guest.power not in allowed or (rescued is not None and guest.rescued != rescued):
            state = STATE_NAMES.get(guest.power, str(guest.power))
            raise InvalidGuestState(f"cannot {action} instance {uuid}: it is {state}"
                                    + (" and rescued" if guest.rescued else ""))
        reason = self.faults.action_failure(action)
        if reason is not None:
            raise GuestActionFailed(uuid, action, reason)
        return guest

    # -- reading ------------------------------------------------------------------------

    def power_state(self, uuid: str) -> int:
        with self._lock:
            return self._guest(uuid).power

    def is_rescued(self, uuid: str) -> bool:
        with self._lock:
            return self._guest(uuid).rescued

    def console_output(self, uuid: str, tail: int | None = None) -> str:
        with self._lock:
            lines = list(self._guest(uuid).console)
        if tail is not None:
            lines = lines[-tail:] if tail > 0 else []
        return "".join(line + "\n" for line in lines)

    def diagnostics(self, uuid: str) -> dict[str, Any]:
        """What the hypervisor reports of the guest (Nova's standard diagnostics fields,
        filled from what the simulated host knows)."""
        with self._lock:
            guest = self._guest(uuid)
            placed = self._instances[uuid]
            held: dict[str, int] = {}
            for amounts in placed.resources.values():
                for rc, n in amounts.items():
                    held[rc] = held.get(rc, 0) + n
            up = guest.power == RUNNING
            return {"state": STATE_NAMES.get(guest.power, "pending"), "driver": "libvirt",
                    "hypervisor": "kvm", "hypervisor_os": "linux",
                    "uptime": int(time.time() - guest.started_at) if up else 0,
                    "config_drive": False, "num_cpus": held.get("VCPU", 0),
                    "memory_mb": held.get("MEMORY_MB", 0),
                    "disk_gb": held.get("DISK_GB", 0), "boots": guest.boots}

    # -- power --------------------------------------------------------------------------

    def power_off(self, uuid: str) -> None:
        with self._lock:
            guest = self._act(uuid, "power off", (RUNNING, PAUSED, SUSPENDED, CRASHED),
                              rescued=None)
            guest.power, guest.rescued = SHUTDOWN, False
            guest.log("[  OK  ] Reached target Power-Off.", "reboot: Power down")

    def power_on(self, uuid: str) -> None:
        with self._lock:
            guest = self._act(uuid, "power on", (SHUTDOWN, CRASHED))
            guest.power, guest.boots = RUNNING, guest.boots + 1
            guest.boot_lines()

    def reboot(self, uuid: str, hard: bool) -> None:
        """A soft reboot needs a running guest; a hard one resets whatever state it is in
        (it also ends a rescue, as Nova's hard reboot does)."""
        with self._lock:
            if hard:
                guest = self._act(uuid, "hard reboot",
                                  (RUNNING, PAUSED, SUSPENDED, SHUTDOWN, CRASHED), None)
            else:
                guest = self._act(uuid, "reboot", (RUNNING,))
                guest.log("[  OK  ] Reached target Reboot.", "reboot: Restarting system")
            guest.power, guest.rescued, guest.boots = RUNNING, False, guest.boots + 1
            guest.boot_lines(" (hard reset)" if hard else "")

    def pause(self, uuid: str) -> None:
        with self._lock:
            self._act(uuid, "pause", (RUNNING,)).power = PAUSED

    def unpause(self, uuid: str) -> None:
        with self._lock:
            self._act(uuid, "unpause", (PAUSED,)).power = RUNNING

    def suspend(self, uuid: str) -> None:
        with self._lock:
            guest = self._act(uuid, "suspend", (RUNNING,))
            guest.power = SUSPENDED
            guest.log("PM: suspend entry (deep)")

    def resume(self, uuid: str) -> None:
        with self._lock:
            guest = self._act(uuid, "resume", (SUSPENDED,))
            guest.power = RUNNING
            guest.log("PM: suspend exit")

    def rescue(self, uuid: str, image_ref: str | None) -> None:
        """Boot the rescue image with the guest's disk attached (a stopped guest too)."""
        with self._lock:
            guest = self._act(uuid, "rescue", (RUNNING, SHUTDOWN))
            guest.power, guest.rescued, guest.boots = RUNNING, True, guest.boots + 1
            guest.boot_lines(f" (rescue image {image_ref or 'the boot image'})")

    def unrescue(self, uuid: str) -> None:
        with self._lock:
            guest = self._act(uuid, "unrescue", (RUNNING, SHUTDOWN), rescued=True)
            guest.power, guest.rescued, guest.boots = RUNNING, False, guest.boots + 1
            guest.boot_lines()

    def trigger_crash_dump(self, uuid: str) -> None:
        """An NMI: the guest's kernel panics and dumps (Nova's trigger_crash_dump)."""
        with self._lock:
            guest = self._act(uuid, "trigger crash dump", (RUNNING, PAUSED), rescued=None)
            guest.log("Kernel panic - not syncing: NMI: Not continuing",
                      "kdump: saving vmcore")
            guest.power = CRASHED

    def rebuild(self, uuid: str, image_ref: str | None) -> None:
        """Wipe the disk, write ``image_ref`` on it, boot it (a stopped guest too)."""
        with self._lock:
            guest = self._act(uuid, "rebuild",
                              (RUNNING, SHUTDOWN, PAUSED, SUSPENDED, CRASHED), rescued=None)
            guest.image_ref = image_ref or guest.image_ref
            guest.power, guest.rescued, guest.boots = RUNNING, False, guest.boots + 1
            guest.boot_lines(f" (rebuilt from image {guest.image_ref})")

    def restore_guest(self, uuid: str, power: int, rescued: bool = False) -> None:
        """After the compute service restarted: the guest's state as its record says."""
        with self._lock:
            guest = self._guest(uuid)
            guest.power, guest.rescued = power, rescued

    # -- the disk -----------------------------------------------------------------------

    def snapshot(self, uuid: str) -> bytes:
        """A copy of the guest's disk: bytes that say what it is (a simulated disk has no
        content of its own), the same for the same guest and boot."""
        with self._lock:
            guest = self._act(uuid, "snapshot", (RUNNING, SHUTDOWN, PAUSED, SUSPENDED))
            header = (f"stratus simulated disk of {uuid}\nimage {guest.image_ref}\n"
                      f"boots {guest.boots}\n").encode()
        return header + hashlib.sha256(header).digest() * 64
