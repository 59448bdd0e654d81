"""Nova's instance states as the server lifecycle writes them (``nova/compute/vm_states.py``,
``task_states.py``, ``power_state.py``), and which states each API action accepts
(the ``check_instance_state`` decorators of ``nova/compute/api.py``), in one place for
the API, the conductor and the computes. The moves' own states live with them in
:mod:`stratus.cells.moves`.
"""

from __future__ import annotations

from dataclasses import dataclass

from stratus.cells import moves

# vm_state
ACTIVE, BUILDING, PAUSED, SUSPENDED = "active", "building", "paused", "suspended"
STOPPED, RESCUED, RESIZED = moves.STOPPED, "rescued", moves.RESIZED
SOFT_DELETED, DELETED, ERROR = "soft-delete", "deleted", "error"
SHELVED, SHELVED_OFFLOADED = moves.SHELVED, moves.SHELVED_OFFLOADED

# task_state, in the order each action goes through them
REBOOTING, REBOOT_PENDING, REBOOT_STARTED = "rebooting", "reboot_pending", "reboot_started"
REBOOTING_HARD = "rebooting_hard"
REBOOT_PENDING_HARD, REBOOT_STARTED_HARD = "reboot_pending_hard", "reboot_started_hard"
POWERING_OFF, POWERING_ON = "powering-off", "powering-on"
PAUSING, UNPAUSING, SUSPENDING, RESUMING = "pausing", "unpausing", "suspending", "resuming"
RESCUING, UNRESCUING = "rescuing", "unrescuing"
IMAGE_SNAPSHOT_PENDING, IMAGE_SNAPSHOT = "image_snapshot_pending", "image_snapshot"
IMAGE_PENDING_UPLOAD, IMAGE_UPLOADING = "image_pending_upload", "image_uploading"
REBUILDING, REBUILD_BLOCK_DEVICE_MAPPING = moves.REBUILDING, "rebuild_block_device_mapping"
REBUILD_SPAWNING = moves.REBUILD_SPAWNING
SOFT_DELETING, RESTORING, DELETING = "soft-deleting", "restoring", "deleting"

SOFT_REBOOT_TASKS = (REBOOTING, REBOOT_PENDING, REBOOT_STARTED)
HARD_REBOOT_TASKS = (REBOOTING_HARD, REBOOT_PENDING_HARD, REBOOT_STARTED_HARD)
SNAPSHOT_TASKS = (IMAGE_SNAPSHOT_PENDING, IMAGE_SNAPSHOT, IMAGE_PENDING_UPLOAD,
                  IMAGE_UPLOADING)
REBUILD_TASKS = (REBUILDING, REBUILD_BLOCK_DEVICE_MAPPING, REBUILD_SPAWNING)
# A hard reboot may interrupt these (Nova's ALLOW_REBOOT).
ALLOW_REBOOT = (None, REBOOTING, REBOOT_PENDING, REBOOT_STARTED, RESUMING, REBOOTING_HARD,
                UNPAUSING, PAUSING, SUSPENDING)

# power_state
NOSTATE, RUNNING, POWER_PAUSED, SHUTDOWN, CRASHED, POWER_SUSPENDED = 0, 1, 3, 4, 6, 7

ANY = None   # an action that does not look at this state


@dataclass(frozen=True)
class Accepts:
    """The states an action may start from (Nova's ``check_instance_state``): ``vm`` and
    ``task`` are the allowed values (None: any); ``launched``: the server must have run
    once; ``locked``: refused for a locked server unless the caller is an admin
    (``check_instance_lock``); ``host``: needs a host (``check_instance_host``)."""

    vm: tuple[str, ...] | None
    task: tuple[str | None, ...] | None = (None,)
    launched: bool = True
    locked: bool = True
    host: bool = True


ACCEPTS: dict[str, Accepts] = {
    "reboot": Accepts((ACTIVE,)),
    "reboot_hard": Accepts((ACTIVE, STOPPED, PAUSED, SUSPENDED, ERROR), ALLOW_REBOOT),
    "stop": Accepts((ACTIVE, ERROR)),
    "start": Accepts((STOPPED,)),
    "pause": Accepts((ACTIVE,)),
    "unpause": Accepts((PAUSED,)),
    "suspend": Accepts((ACTIVE,)),
    "resume": Accepts((SUSPENDED,)),
    "rescue": Accepts((ACTIVE, STOPPED, ERROR)),
    "unrescue": Accepts((RESCUED,)),
    "rebuild": Accepts((ACTIVE, STOPPED, ERROR)),
    # A snapshot is not refused for a locked server (Nova: a lock guards against change).
    "createImage": Accepts((ACTIVE, STOPPED, PAUSED, SUSPENDED), locked=False),
    "trigger_crash_dump": Accepts((ACTIVE, PAUSED, RESCUED, RESIZED, ERROR)),
    "soft_delete": Accepts(ANY, ANY, host=False),
    "restore": Accepts((SOFT_DELETED,), host=False),
    "force_delete": Accepts(ANY, (None,), launched=False, host=False),
    "delete": Accepts(ANY, ANY, launched=False, host=False),
    "update_metadata": Accepts((ACTIVE, PAUSED, SUSPENDED, STOPPED), host=False),
    "console_output": Accepts(ANY, ANY, launched=False, locked=False),
    "diagnostics": Accepts(ANY, ANY, launched=False, locked=False),
}
