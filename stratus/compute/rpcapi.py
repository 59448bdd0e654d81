"""ComputeRPC: what other services may ask of a compute service (topic "compute", server = host).

Versions:

- 1.0: build_and_run_instance (cast), terminate_instance (call).
- 1.1: set_host_enabled (call): add or remove COMPUTE_STATUS_DISABLED on the host's root
  compute-node providers in Placement before answering (design document 000).
- 1.2: the resize steps, each a call the conductor makes in turn (it owns the
  allocations and the records; the computes only act on their hypervisor):
  resize_instance (source: power off, keep the copy), finish_resize (destination:
  start the resized copy), confirm_resize (source: drop its copy), revert_resize
  (destination: drop the resized copy), finish_revert_resize (source: run again).
- 1.3: attach_interface, detach_interface (calls): the instance's allocations changed in
  place because a port with a resource request came or went; the hypervisor's books
  follow (the API owns the Placement side and the port's binding). From 1.3 a build
  binds the instance's ports (``request_spec["port_ids"]``) before it spawns.
- 1.4: the other moves, and the ports through every move (design document 004):
  ``finish_resize`` and ``finish_revert_resize`` take the ``request_spec`` whose
  ``provider_mappings`` say which provider serves each port group, and bind the
  instance's ports here with it; without it (a caller pinned to 1.3 by
  ``[upgrade_levels] compute``) an instance whose ports have resource requests fails
  the step with PortUpdateFailed. pre_live_migration (destination: start the incoming
  copy; the conductor manages the port bindings of a live migration), rebuild_instance
  (evacuation's destination), shelve_instance, shelve_offload_instance,
  unshelve_instance.

- 1.5: the server lifecycle on the host (casts unless said): reboot_instance,
  stop_instance, start_instance, pause_instance, unpause_instance, suspend_instance,
  resume_instance, rescue_instance, unrescue_instance, rebuild_in_place,
  snapshot_instance, backup_instance, set_admin_password, soft_delete_instance,
  restore_instance, trigger_crash_dump, inject_network_info; get_console_output, get_diagnostics and
  snapshot_for_shelve (calls). Each cast finds the task state the
  API (or the conductor) set and does nothing otherwise, so a repeated delivery is
  harmless (:mod:`stratus.compute.lifecycle`).
- 1.6: finish_resize's ``power_on`` (a server resized while stopped stays stopped).
- 1.7: no new method or argument: the release whose computes sign every message they send
  and keep their records through the conductor (issue 29). Its ``services.version``
  (1007) is how a receiver in ``[bus] signing = transition`` tells a compute of the
  release before it (1006 or below), whose unsigned messages it accepts, from a new one,
  whose unsigned messages it refuses (:mod:`stratus.signed_bus`).

A compute started with ``--rpc-version 1.0`` advertises 1.0 (on the bus and, encoded by
:func:`service_version`, in its ``services.version`` row), as a not-yet-upgraded compute
would during a rolling upgrade; callers check before sending newer methods
(:mod:`stratus.compute.api_helpers`).

Ownership of allocations: the compute never writes allocations. The API (delete) and the
conductor (build, reschedule) own them; the compute only reports its providers.
"""

from __future__ import annotations

from stratus.bus import RPCInterface, Version, rpc_method
from stratus.compute import errors as compute_errors
from stratus.compute.drivers import errors as driver_errors
from stratus.compute.drivers import guests as guest_errors

TOPIC = "compute"
BINARY = "stratus-compute"
SET_HOST_ENABLED_SINCE = "1.1"
MOVES_SINCE = "1.2"
INTERFACES_SINCE = PORTS_SINCE = "1.3"
PORT_MOVES_SINCE = "1.4"
LIFECYCLE_SINCE = "1.5"
STOPPED_MOVES_SINCE = "1.6"   # finish_resize(power_on=False): a stopped server stays off
SIGNED_SINCE = "1.7"          # computes sign what they send (and hold no database)


def service_version(rpc_version: str) -> int:
    """The ``services.version`` integer for an advertised RPC version ("1.1" -> 1001)."""
    version = Version.parse(rpc_version)
    return version.major * 1000 + version.minor


def rpc_version(service_version_number: int) -> str:
    """The inverse of :func:`service_version` (0, a row that never said, is "0.0")."""
    major, minor = divmod(service_version_number, 1000)
    return f"{major}.{minor}"


class ComputeRPC(RPCInterface):
    service = "compute"
    version = "1.7"
    errors = (
        driver_errors.HypervisorUnavailable,
        driver_errors.NodeNotFound,
        driver_errors.InstanceExists,
        driver_errors.InstanceNotFound,
        driver_errors.InvalidAllocation,
        driver_errors.InsufficientCapacity,
        driver_errors.SpawnFailed,
        compute_errors.PortUpdateFailed,
        guest_errors.InvalidGuestState,
        guest_errors.GuestActionFailed,
    )

    @rpc_method(since="1.0", kind="cast")
    def build_and_run_instance(self, instance: dict, allocations: dict, request_spec: dict,
                               alternates: list) -> None:
        """Spawn ``instance`` (``{"uuid", "name", "node"?...}``) with its claimed allocations.

        On success the instance is ACTIVE with host and node in the cell database; on
        failure the compute casts ConductorRPC.reschedule and changes nothing else.
        """

    @rpc_method(since="1.0")
    def terminate_instance(self, instance_uuid: str) -> None:
        """Destroy the instance on the hypervisor and mark it deleted in the cell database
        (an instance not on this host is already gone: not an error)."""
        raise NotImplementedError

    @rpc_method(since=SET_HOST_ENABLED_SINCE)
    def set_host_enabled(self, enabled: bool) -> str:
        """Reflect the service's enabled state as the disabled trait; "enabled"/"disabled"."""
        raise NotImplementedError

    @rpc_method(since=MOVES_SINCE)
    def resize_instance(self, instance_uuid: str) -> None:
        """Source host: power the instance off and keep it, holding what it held, until the
        resize is confirmed or reverted."""
        raise NotImplementedError

    @rpc_method(since=MOVES_SINCE, arg_since={"request_spec": PORT_MOVES_SINCE,
                                              "power_on": STOPPED_MOVES_SINCE})
    def finish_resize(self, instance: dict, allocations: dict,
                      request_spec: dict | None = None, power_on: bool = True) -> str:
        """Destination host: bind the instance's ports here (``request_spec``'s mappings
        name each group's provider) and start the resized copy of ``instance``
        (``{"uuid", "name", "node"?}``) with its new allocations; the node it runs on.
        ``power_on=False`` (a server resized while stopped) leaves the copy powered off."""
        raise NotImplementedError

    @rpc_method(since=MOVES_SINCE)
    def confirm_resize(self, instance_uuid: str) -> None:
        """Source host: the resize is confirmed; destroy the copy left behind (a copy that
        is already gone is not an error)."""
        raise NotImplementedError

    @rpc_method(since=MOVES_SINCE)
    def revert_resize(self, instance_uuid: str) -> None:
        """Destination host: the resize is reverted; destroy the resized copy (already gone:
        not an error)."""
        raise NotImplementedError

    @rpc_method(since=MOVES_SINCE, arg_since={"request_spec": PORT_MOVES_SINCE})
    def finish_revert_resize(self, instance_uuid: str,
                             request_spec: dict | None = None) -> None:
        """Source host: bind the instance's ports here again (the spec's mappings, worked
        out from the allocation given back) and run the copy left behind again."""
        raise NotImplementedError

    @rpc_method(since=PORT_MOVES_SINCE)
    def pre_live_migration(self, instance: dict, allocations: dict) -> str:
        """Live migration's destination: start the incoming copy with its allocations (its
        ports get inactive bindings here from the conductor); the node."""
        raise NotImplementedError

    @rpc_method(since=PORT_MOVES_SINCE)
    def rebuild_instance(self, instance: dict, allocations: dict,
                         request_spec: dict) -> str:
        """Evacuation's destination: bind the instance's ports here and start it anew with
        its allocations (its own host is down); the node."""
        raise NotImplementedError

    @rpc_method(since=PORT_MOVES_SINCE)
    def shelve_instance(self, instance_uuid: str) -> None:
        """Power the instance off and keep it (and what it holds) here."""
        raise NotImplementedError

    @rpc_method(since=PORT_MOVES_SINCE)
    def shelve_offload_instance(self, instance_uuid: str) -> None:
        """Drop the shelved instance from this host and unbind its ports (they stay the
        server's); the conductor frees its allocations."""
        raise NotImplementedError

    @rpc_method(since=PORT_MOVES_SINCE)
    def unshelve_instance(self, instance: dict, allocations: dict | None,
                          request_spec: dict | None) -> str:
        """Run a shelved instance again: the copy kept here (``allocations`` None), or,
        shelved offloaded, bind its ports here and start it with ``allocations``; the node."""
        raise NotImplementedError

    @rpc_method(since=INTERFACES_SINCE)
    def attach_interface(self, instance_uuid: str, port_id: str, allocations: dict) -> None:
        """``port_id`` joined the instance, whose allocations are now ``allocations`` (its
        port's resources included): the hypervisor reserves them, or raises
        InsufficientCapacity and changes nothing."""
        raise NotImplementedError

    @rpc_method(since=INTERFACES_SINCE)
    def detach_interface(self, instance_uuid: str, port_id: str, allocations: dict) -> None:
        """``port_id`` left the instance, whose allocations are now ``allocations``."""
        raise NotImplementedError

    # ---- 1.5: the server lifecycle (stratus.compute.lifecycle, .snapshot) -------------

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def reboot_instance(self, instance_uuid: str, reboot_type: str) -> None:
        """Reboot ("SOFT" or "HARD"): task rebooting(_hard) -> reboot_pending(_hard) ->
        reboot_started(_hard) -> none, ACTIVE; a failure leaves it in ERROR."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def stop_instance(self, instance_uuid: str) -> None:
        """Power off: task powering-off -> none, STOPPED (power state SHUTDOWN)."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def start_instance(self, instance_uuid: str) -> None:
        """Power on: task powering-on -> none, ACTIVE."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def pause_instance(self, instance_uuid: str) -> None:
        """Task pausing -> none, PAUSED."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def unpause_instance(self, instance_uuid: str) -> None:
        """Task unpausing -> none, ACTIVE."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def suspend_instance(self, instance_uuid: str) -> None:
        """Task suspending -> none, SUSPENDED."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def resume_instance(self, instance_uuid: str) -> None:
        """Task resuming -> none, ACTIVE."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def rescue_instance(self, instance_uuid: str, rescue_image_ref: str | None = None
                        ) -> None:
        """Boot the rescue image (None: the server's own) with the disk attached: task
        rescuing -> none, RESCUED."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def unrescue_instance(self, instance_uuid: str) -> None:
        """Task unrescuing -> none, ACTIVE."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def rebuild_in_place(self, instance_uuid: str, image_ref: str | None,
                         stopped: bool = False) -> None:
        """Rebuild on this host from ``image_ref``: task rebuilding ->
        rebuild_block_device_mapping -> rebuild_spawning -> none, ACTIVE (STOPPED again
        if ``stopped``); a failure leaves it in ERROR."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def snapshot_instance(self, instance_uuid: str, image_id: str) -> None:
        """Copy the disk into the queued image ``image_id``: task image_snapshot_pending ->
        image_snapshot -> image_pending_upload -> image_uploading -> none."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def backup_instance(self, instance_uuid: str, image_id: str, backup_type: str,
                        rotation: int) -> None:
        """A snapshot as a backup (task image_backup ...), then the oldest backups of
        ``backup_type`` beyond ``rotation`` deleted."""

    @rpc_method(since=LIFECYCLE_SINCE)
    def snapshot_for_shelve(self, instance_uuid: str, image_id: str) -> None:
        """Copy the disk into the queued image ``image_id`` before a shelve (no task
        state: the conductor's); deletes the image and raises if that fails."""
        raise NotImplementedError

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def soft_delete_instance(self, instance_uuid: str) -> None:
        """Power off and keep: task soft-deleting -> none, SOFT_DELETED."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def restore_instance(self, instance_uuid: str) -> None:
        """Power on a soft-deleted server: task restoring -> none, ACTIVE."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def set_admin_password(self, instance_uuid: str, new_pass: str) -> None:
        """changePassword: task updating_password -> none (the guest agent sets it)."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def inject_network_info(self, instance_uuid: str) -> None:
        """Write the guest's network configuration again (injectNetworkInfo)."""

    @rpc_method(since=LIFECYCLE_SINCE, kind="cast")
    def trigger_crash_dump(self, instance_uuid: str) -> None:
        """An NMI to the guest (its kernel dumps and halts)."""

    @rpc_method(since=LIFECYCLE_SINCE)
    def get_console_output(self, instance_uuid: str, tail_length: int | None = None) -> str:
        """The guest's console log (its last ``tail_length`` lines)."""
        raise NotImplementedError

    @rpc_method(since=LIFECYCLE_SINCE)
    def get_diagnostics(self, instance_uuid: str) -> dict:
        """What the hypervisor reports of the guest."""
        raise NotImplementedError
