"""Errors of the compute service itself (not of its hypervisor): declared by ComputeRPC, so
they reach the caller as themselves."""

from __future__ import annotations


class PortUpdateFailed(Exception):
    """A port of the instance could not be bound here as the move needs (design document
    004: a compute asked to move a server whose ports have resource requests, without the
    request spec that says which provider serves each, fails the move)."""

    def __init__(self, port_id: str, reason: str) -> None:
        super().__init__(port_id, reason)
        self.port_id, self.reason = port_id, reason

    def __str__(self) -> str:
        return f"port {self.port_id} could not be bound: {self.reason}"
