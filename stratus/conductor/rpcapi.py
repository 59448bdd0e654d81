"""The conductor's RPC interface (topic ``conductor``)."""

from __future__ import annotations

from typing import Any

from stratus.bus import RPCInterface, rpc_method


class ConductorRPC(RPCInterface):
    service = "conductor"
    version = "1.0"

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
