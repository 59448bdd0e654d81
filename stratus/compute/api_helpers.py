"""What the compute API needs to tell a compute about its enabled state (design document 000).

The os-services API updates the services row first, then, through
:func:`set_host_enabled_if_supported`, calls the compute so the disabled trait
is in Placement before the API answers. It does not call:

- a compute that is down (not heard from within ``service_down_time``, or
  forced down): it would time out; it repairs the trait on its next start;
- a compute older than ComputeRPC 1.1 (its ``services.version``): it has no
  such method; it repairs the trait once upgraded and restarted.

Errors of the call itself (a timeout, Placement failing on the compute)
propagate: the API decides whether to report or log them. The compute's
periodic pass repairs the trait either way.
"""

from __future__ import annotations

import datetime as dt

from stratus.bus import RPCClient
from stratus.cells.services import Service
from stratus.compute.rpcapi import SET_HOST_ENABLED_SINCE, ComputeRPC, service_version


def supports_set_host_enabled(service: Service) -> bool:
    return service.version >= service_version(SET_HOST_ENABLED_SINCE)


def set_host_enabled_if_supported(compute: RPCClient[ComputeRPC], service: Service,
                                  enabled: bool, *, now: dt.datetime,
                                  down_time: int) -> bool:
    """Call set_host_enabled on ``service``'s host if it is up and new enough; True if called."""
    if not service.is_up(now, down_time) or not supports_set_host_enabled(service):
        return False
    compute.prepare(server=service.host).call("set_host_enabled", enabled=enabled)
    return True
