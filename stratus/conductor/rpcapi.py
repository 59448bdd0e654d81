"""The conductor's RPC interface (topic ``conductor``).

Versions: 1.0 build_instances, reschedule; 1.1 resize_instance, confirm_resize,
revert_resize (the API records the migration first and casts these); 1.2
live_migrate_instance, evacuate_instance, shelve_instance, shelve_offload_instance,
unshelve_instance; 1.3 rebuild_server (a rebuild in place).
"""

from __future__ import annotations

from typing import Any

from stratus.bus import RPCInterface, rpc_method


class ConductorRPC(RPCInterface):
    service = "conductor"
    version = "1.3"

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

    @rpc_method(since="1.2", kind="cast")
    def shelve_instance(self, instance_uuid: str, offload: bool) -> None:
        """Power the server off and keep it on its host (``offload``: then offload it)."""
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
