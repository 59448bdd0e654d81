"""The conductor's RPC interface (topic ``conductor``).

Versions: 1.0 build_instances, reschedule; 1.1 resize_instance, confirm_resize,
revert_resize (the API records the migration first and casts these); 1.2
live_migrate_instance, evacuate_instance, shelve_instance, shelve_offload_instance,
unshelve_instance; 1.3 rebuild_server (a rebuild in place), shelve_instance's image_id;
1.4 the ``compute_*`` calls: every cell record a compute reads or writes, so computes
need no database (issue 29; :mod:`stratus.compute.records`). Each names the calling
compute's ``host``; the conductor answers only about that host's own records and
refuses anything else with :class:`NotYourRecord` (logged at WARNING). 1.5
compute_hosts_state: the two reads of every resource-tracker pass for every host a
process simulates, in one call.
"""

from __future__ import annotations

from typing import Any

from stratus.bus import RPCInterface, rpc_method


class NotYourRecord(Exception):
    """A compute asked about (or to change) a record that is not its host's."""


class ConductorRPC(RPCInterface):
    service = "conductor"
    version = "1.5"
    errors = (NotYourRecord,)

    @rpc_method(since="1.0", kind="cast")
    def build_instances(self, instances: list[dict[str, Any]],
                        request_spec: dict[str, Any]) -> None:
        """Schedule and build these servers (one request spec for all of them).

        Each instance is ``{"uuid", "name", "project_id", "user_id"}`` (more keys are
        kept); ``request_spec`` is ``RequestSpec.to_dict()``. The outcome is visible in
        the instance records: built on a host, or ERROR with the reason (in cell0 when
        no host was found)."""
        raise NotImplementedError

    @rpc_method(since="1.0", kind="cast")
    def reschedule(self, instance_uuid: str, failed_host: str, reason: str) -> None:
        """A compute's spawn failed: move the claim to the next alternate and build there,
        or, after ``[scheduler] max_attempts``, put the instance in ERROR with the reasons."""
        raise NotImplementedError

    @rpc_method(since="1.1", kind="cast")
    def resize_instance(self, instance_uuid: str, migration_uuid: str,
                        request_spec: dict[str, Any]) -> None:
        """Resize the server as ``request_spec`` asks (its new flavor, its cell, the hosts
        to avoid). The API has recorded the migration (``pre-migrating``); the outcome is
        the server in VERIFY_RESIZE on its new host, or back in ACTIVE on its old one
        with the migration in ``error``."""
        raise NotImplementedError

    @rpc_method(since="1.1", kind="cast")
    def confirm_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Drop the source copy and the migration's allocations (migration ``confirming``)."""
        raise NotImplementedError

    @rpc_method(since="1.1", kind="cast")
    def revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Go back to the source host and the old flavor (migration ``reverting``)."""
        raise NotImplementedError

    @rpc_method(since="1.2", kind="cast")
    def live_migrate_instance(self, instance_uuid: str, migration_uuid: str,
                              request_spec: dict[str, Any]) -> None:
        """Live-migrate the server (migration ``accepted``): ACTIVE on its new host, or on
        its old one with the migration in ``error``."""
        raise NotImplementedError

    @rpc_method(since="1.2", kind="cast")
    def evacuate_instance(self, instance_uuid: str, migration_uuid: str,
                          request_spec: dict[str, Any]) -> None:
        """Rebuild the server of a down host elsewhere (migration ``accepted``)."""
        raise NotImplementedError

    @rpc_method(since="1.2", kind="cast", arg_since={"image_id": "1.3"})
    def shelve_instance(self, instance_uuid: str, offload: bool,
                        image_id: str | None = None) -> None:
        """Power the server off and keep it on its host (``offload``: then offload it);
        ``image_id``: the queued image its disk is copied into first (Nova's
        ``<name>-shelved`` snapshot, deleted once the server is unshelved)."""
        raise NotImplementedError

    @rpc_method(since="1.2", kind="cast")
    def shelve_offload_instance(self, instance_uuid: str) -> None:
        """Drop a shelved server from its host and free what it held there."""
        raise NotImplementedError

    @rpc_method(since="1.2", kind="cast")
    def unshelve_instance(self, instance_uuid: str, request_spec: dict[str, Any]) -> None:
        """Run a shelved server again (an offloaded one: scheduled like a boot)."""
        raise NotImplementedError

    @rpc_method(since="1.3", kind="cast")
    def rebuild_server(self, instance_uuid: str, image_ref: str | None,
                       orig_image_ref: str | None, request_spec: dict[str, Any] | None,
                       stopped: bool = False) -> None:
        """Rebuild the server where it is (task ``rebuilding``): with a new image its host
        is checked first (no claim); ERROR with the reason if it cannot run it."""
        raise NotImplementedError

    # ---- 1.4: a compute's cell records, through its cell's conductor ------------------
    # Timestamps travel as ISO 8601 strings (the compute's clock, as its own writes had).

    @rpc_method(since="1.4", idempotent=True)
    def compute_register(self, host: str, binary: str, version: int, now: str) -> int:
        """Create (or refresh at restart) the host's service row; its id."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_heartbeat(self, hosts: list[str], binary: str, now: str) -> None:
        """The hosts reported now (one call for every host a process simulates)."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_service(self, host: str, binary: str) -> dict[str, Any] | None:
        """The host's service row: ``{"id", "disabled", "disabled_reason"}``, or None."""
        raise NotImplementedError

    @rpc_method(since="1.4")
    def compute_set_disabled(self, host: str, binary: str, disable: bool,
                             reason: str | None) -> bool:
        """A hypervisor event's flip of the host's disabled flag (an operator's disable is
        kept); True if it changed."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_save_node(self, host: str, service_id: int | None, node: dict[str, Any],
                          now: str) -> None:
        """Insert or refresh one of the host's compute_nodes rows (keyed by root provider)."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_root_providers(self, host: str) -> list[str]:
        """The root providers of the host's compute_nodes rows."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_instance_active(self, host: str, instance_uuid: str, node: str, now: str,
                                started: str | None = None) -> bool:
        """A server built here runs on ``node`` (with ``started``: the build's step too);
        False if it has no live record (deleted during its build)."""
        raise NotImplementedError

    @rpc_method(since="1.4")
    def compute_instance_rescheduling(self, host: str, instance_uuid: str, now: str,
                                      reason: str, started: str) -> bool:
        """The spawn here failed: back to scheduling, the step's error recorded."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_instance_deleted(self, host: str, instance_uuid: str, now: str) -> bool:
        """A server of this host was destroyed here."""
        raise NotImplementedError

    @rpc_method(since="1.4")
    def compute_instance_advance(self, host: str, instance_uuid: str,
                                 expect: list[str | None], values: dict[str, Any]) -> bool:
        """A host action's compare-and-swap on its server's task state (only vm_state,
        task_state, power_state, fault, launched_at, updated_at may be written)."""
        raise NotImplementedError

    @rpc_method(since="1.4")
    def compute_event_start(self, host: str, instance_uuid: str, names: list[str],
                            event: str) -> int | None:
        """Begin a step of the server's newest action named one of ``names``; its id."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_event_finish(self, host: str, event_id: int, error: str | None) -> None:
        """End a step this host began: Success, or Error with ``error``."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_event_drop(self, host: str, event_id: int) -> None:
        """Forget a step this host began that turned out not to be one."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_host_instances(self, host: str) -> dict[str, Any]:
        """What runs on the host by the records (``running``, ``shelved``, ``left``)."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_orphans(self, host: str, running: list[str],
                        outgoing: list[str]) -> dict[str, list[str]]:
        """Of the guests the host runs and the copies it keeps, those nothing books there
        (``destroy``, ``drop``): a verdict, nothing about other hosts."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_evacuations_done(self, host: str) -> list[list[str]]:
        """Evacuations away from this host waiting for its clean-up: [migration, server]."""
        raise NotImplementedError

    @rpc_method(since="1.5", idempotent=True)
    def compute_hosts_state(self, hosts: list[str], binary: str) -> dict[str, Any]:
        """For each of ``hosts`` that has a service row: ``{"service": {"id", "disabled",
        "disabled_reason"}, "evacuations": [[migration, server], ...]}`` (what
        compute_service and compute_evacuations_done answer), keyed by host."""
        raise NotImplementedError

    @rpc_method(since="1.4", idempotent=True)
    def compute_evacuation_finished(self, host: str, migration_uuid: str) -> bool:
        """The host cleaned up after an evacuation from it: the migration completes."""
        raise NotImplementedError
