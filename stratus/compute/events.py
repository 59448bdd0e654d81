"""Hypervisor connection events -> the service's disabled state, as Nova's libvirt driver does.

Connection lost: an enabled service is disabled with the reason
``AUTO: Connection to <hypervisor> lost: <why>`` and its root providers get
COMPUTE_STATUS_DISABLED, so the scheduler stops choosing it. A service that is
already disabled keeps its reason (an operator's own disable is not rewritten).

Connection restored: the service is enabled again, and the trait removed, only
if its disabled reason still starts with ``AUTO:``; an operator who disabled it
meanwhile (or before) keeps it disabled.
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Engine

from stratus.compute.drivers import HypervisorEvent
from stratus.compute.records import CellRecords, as_records
from stratus.compute.resource_tracker import ResourceTracker
from stratus.compute.rpcapi import BINARY

LOG = logging.getLogger(__name__)
REASON_LENGTH = 255  # services.disabled_reason


class HypervisorEventHandler:
    """Subscribe an instance to the driver (``driver.subscribe(handler)``)."""

    def __init__(self, host: str, records: CellRecords | Engine, tracker: ResourceTracker,
                 binary: str = BINARY) -> None:
        self.host, self.records, self.tracker, self.binary = (host, as_records(records),
                                                              tracker, binary)

    def __call__(self, event: HypervisorEvent) -> None:
        if event.kind == "connection_lost":
            changed = self._change(disable=True, reason=event.disable_reason)
        else:
            changed = self._change(disable=False, reason=None)
        if changed:
            LOG.warning("%s: %s; service %s", self.host, event.reason,
                        "disabled" if event.kind == "connection_lost" else "enabled again")
            # The trait follows the flag now; should Placement be unreachable, the next
            # resource tracker pass brings it in line with the flag.
            try:
                self.tracker.set_disabled(event.kind == "connection_lost")
            except Exception:
                LOG.exception("%s: disabled trait not updated after %s", self.host, event.kind)

    def _change(self, *, disable: bool, reason: str | None) -> bool:
        """Flip the service's flag if the rules allow; True if it changed."""
        return self.records.set_service_disabled(self.host, self.binary, disable,
                                                 (reason or "AUTO: ")[:REASON_LENGTH]
                                                 if disable else None)
