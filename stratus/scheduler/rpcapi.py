"""The scheduler's RPC interface (topic ``scheduler``): where should these servers go?"""

from __future__ import annotations

from typing import Any

from stratus.bus import RPCInterface, rpc_method
from stratus.scheduler.errors import NoValidHost


class SchedulerRPC(RPCInterface):
    service = "scheduler"
    version = "1.2"
    errors = (NoValidHost,)

    @rpc_method(since="1.0")
    def select_destinations(self, request_spec: dict[str, Any], instance_uuids: list[str],
                            return_alternates: bool = True) -> list[list[dict[str, Any]]]:
        """Per instance, in order: the chosen host first (its allocations already claimed
        in Placement for that instance), then up to ``max_attempts - 1`` alternates in the
        same cell, each ``{host, nodename, cell_uuid, allocation_request,
        allocation_request_version}``. Raises NoValidHost, with counts, when any instance
        cannot be placed (and then nothing stays claimed)."""
        raise NotImplementedError

    @rpc_method(since="1.1")
    def dry_run(self, request_spec: dict[str, Any], count: int = 1) -> dict[str, Any]:
        """Would ``count`` servers of ``request_spec`` fit now? Claims nothing. Answers
        ``{fits, servers, message, category, hosts: [{host, nodename, cell_uuid, weight,
        free}] (best first), placements: [host per server], details}``; when it would
        not fit, ``message`` is the NoValidHost line a real boot would end with."""
        raise NotImplementedError

    @rpc_method(since="1.2")
    def check_rebuild(self, request_spec: dict[str, Any], instance_uuid: str,
                      node_uuid: str) -> None:
        """Can the server be rebuilt on its compute node ``node_uuid`` with the image
        ``request_spec`` now names? Asks no other host and claims nothing (the server
        keeps what it holds); NoValidHost with the reason if not
        (``stratus.scheduler.rebuild``)."""
        raise NotImplementedError
