"""Ports through every move (design document 004): what each move does with a server's
ports, in one place.

* Every move re-reads the server's ports from the network service and schedules with
  their groups (``move_spec``); a destination must then speak ComputeRPC 1.4, which
  binds ports from the spec's mappings (1.3 if none of the ports asks for resources).
* The chosen candidate's ``mappings`` say which provider serves each group at the
  destination (``ports.with_selection``).
* Going back to the source (a revert, or a move rolled back) there is no candidate:
  the mapping is worked out again from the allocation the server holds there and its
  providers' traits (``back_to``, ``network.model.map_groups``), as Nova does.
* Where no compute can bind (its host is down: an evacuation that failed), the
  conductor binds the ports itself (``bind_here``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from stratus.compute.rpcapi import PORT_MOVES_SINCE, PORTS_SINCE
from stratus.conductor import ports
from stratus.conductor.build import ConductorContext
from stratus.network.model import MappingMissing, binding_allocation, map_groups, port_groups

LOG = logging.getLogger(__name__)


def move_spec(ctx: ConductorContext, instance_uuid: str,
              spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with the server's ports as they are now: their groups, and the compute
    version a destination needs to bind them."""
    found = ports.read_ports(ctx.network, ctx.api_engine, [instance_uuid])[instance_uuid]
    if not found:
        return dict(spec)
    needs = PORT_MOVES_SINCE if any(port_groups(p) for p in found) else PORTS_SINCE
    return ports.with_ports(spec, found, needs_compute=needs)


def heal_first(ctx: ConductorContext, cell_engine: Any, instance: Mapping[str, Any]) -> None:
    """A server whose ports hold no allocation at its source (booted before its ports
    were placed, or its books lost) has them allocated there before it moves, so every
    later step (a revert, a rollback) finds them (design document 004). A heal that fails
    is logged: the destination's claim includes the ports' groups anyway."""
    from stratus.repair import heal

    try:
        done = heal.heal_instance(ctx.placement, ctx.network, cell_engine, instance,
                                  ports_only=True)
    except Exception as exc:
        LOG.warning("server %s: its ports' allocations could not be healed before the "
                    "move: %s", instance.get("uuid"), exc)
        return
    if done is not None:
        LOG.info("server %s: healed before the move: %s", done.instance_uuid,
                 "; ".join(done.what))


def has_port_requests(ctx: ConductorContext, instance_uuid: str) -> bool:
    found = ports.read_ports(ctx.network, ctx.api_engine, [instance_uuid])[instance_uuid]
    return any(port_groups(p) for p in found)


def mappings_from(ctx: ConductorContext, instance_uuid: str,
                  allocations: Mapping[str, Any]) -> dict[str, list[str]]:
    """Which provider of ``allocations`` ({rp: {"resources": ...}}) serves each of the
    server's port groups (by the providers' traits and amounts); {} if the ports ask for
    nothing. MappingMissing when the allocation cannot serve them (a port allocation
    that was never made: heal_allocations repairs it)."""
    found = ports.read_ports(ctx.network, ctx.api_engine, [instance_uuid])[instance_uuid]
    groups = [g for p in found for g in port_groups(p)]
    if not groups:
        return {}
    amounts = {rp: dict(a.get("resources", a)) for rp, a in allocations.items()}
    traits = {rp: ctx.placement.get_traits(rp)[0] for rp in amounts}
    return {suffix: [rp] for suffix, rp in map_groups(groups, amounts, traits).items()}


def back_to(ctx: ConductorContext, instance_uuid: str, spec: Mapping[str, Any],
            consumer: str) -> dict[str, Any]:
    """``spec`` (with the ports) whose mappings serve the ports from what ``consumer``
    (the migration, or the server once given back) holds: for a compute binding them at
    the source again. A mapping that cannot be worked out leaves the ports' groups
    unmapped, and the compute then binds them without an allocation (logged)."""
    held = ctx.placement.get_allocations(consumer).get("allocations") or {}
    out = move_spec(ctx, instance_uuid, spec)
    try:
        out["provider_mappings"] = mappings_from(ctx, instance_uuid, held)
    except MappingMissing as exc:
        LOG.warning("server %s: its ports' providers at the source cannot be worked out "
                    "(%s); they are bound there without an allocation", instance_uuid, exc)
        out["provider_mappings"] = {}
        out["port_groups"] = []
    return out


def bind_here(ctx: ConductorContext, instance_uuid: str, host: str,
              mappings: Mapping[str, list[str]]) -> None:
    """Bind the server's ports to ``host`` from the conductor (when no compute there can)."""
    if ctx.network is None:
        return
    found = ports.read_ports(ctx.network, ctx.api_engine, [instance_uuid])[instance_uuid]
    for port in found:
        try:
            allocation = binding_allocation(port, mappings)
        except MappingMissing:
            allocation = None
        ctx.network.bind_port(port, host, allocation)


def compute_can_bind(client: Any) -> bool:
    """Whether ``client`` (a ComputeRPC client, perhaps capped by [upgrade_levels]
    compute) may send a move step its request spec."""
    return bool(client.can_send_version(PORT_MOVES_SINCE))
