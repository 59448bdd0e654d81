"""Ports through every move (design document 004): what each move does with a server's
ports, in one place.

* Every move re-reads the server's ports from the network service and schedules with
  their groups (``move_spec``); a destination must then speak ComputeRPC 1.4, which
  binds ports from the spec's mappings (1.3 if none of the ports asks for resources).
* The chosen candidate's ``mappings`` say which provider serves each group at the
  destination (``ports.with_selection``).
* A revert has no candidate: the mapping is worked out again from the allocation
  given back to the server at the source and its providers' traits (``back_to``,
  ``network.model.map_groups``), as Nova does. When it cannot be (the server held
  nothing for a port there), the revert fails cleanly (``PortsUnmapped``) rather than
  bind a port without the allocation that serves it.
* A move rolled back puts each port back as it was when the move started (``rebind``);
  one its conductor never finished works the mapping out as a revert does
  (``bind_back``).
* Live migration needs the network service's multiple bindings (``binding-extended``)
  for a server whose ports have resource requests (``bindings_extended``).
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
from stratus.network import client as nc
from stratus.network.model import MappingMissing, binding_allocation, map_groups, port_groups

LOG = logging.getLogger(__name__)


def read(ctx: ConductorContext, instance_uuid: str) -> list[dict[str, Any]]:
    """The server's ports as the network service has them now."""
    return ports.read_ports(ctx.network, ctx.api_engine, [instance_uuid])[instance_uuid]


def move_spec(ctx: ConductorContext, instance_uuid: str, spec: Mapping[str, Any],
              found: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``spec`` with the server's ports as they are now (``found``, if already read):
    their groups, and the compute version a destination needs to bind them."""
    if found is None:
        found = read(ctx, instance_uuid)
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


class PortsUnmapped(MappingMissing):
    """Which provider serves a port's groups at the source cannot be worked out from the
    allocation the server holds there (design document 004's revert)."""


def mappings_from(ctx: ConductorContext, instance_uuid: str,
                  allocations: Mapping[str, Any]) -> dict[str, list[str]]:
    """Which provider of ``allocations`` ({rp: {"resources": ...}}) serves each of the
    server's port groups (by the providers' traits and amounts); {} if the ports ask for
    nothing. PortsUnmapped when the allocation cannot serve them (a port allocation
    that was never made, or lost)."""
    found = read(ctx, instance_uuid)
    groups = [g for p in found for g in port_groups(p)]
    if not groups:
        return {}
    amounts = {rp: dict(a.get("resources", a)) for rp, a in allocations.items()}
    traits = {rp: ctx.placement.get_traits(rp)[0] for rp in amounts}
    try:
        return {suffix: [rp] for suffix, rp in map_groups(groups, amounts, traits).items()}
    except MappingMissing:
        named = ", ".join(f"port {g.port_id}'s group {g.suffix} ("
                          + ", ".join(f"{rc}={n}" for rc, n in sorted(g.resources.items()))
                          + ")" for g in groups)
        raise PortsUnmapped(
            f"no provider of the allocation {instance_uuid} holds at the source serves "
            f"{named}: it holds {_amounts(amounts)}") from None


def _amounts(amounts: Mapping[str, Mapping[str, int]]) -> str:
    return "; ".join(f"{rp}: " + ", ".join(f"{rc}={n}" for rc, n in sorted(a.items()))
                     for rp, a in sorted(amounts.items())) or "nothing"


def back_to(ctx: ConductorContext, instance_uuid: str, spec: Mapping[str, Any],
            consumer: str) -> dict[str, Any]:
    """``spec`` (with the ports) whose mappings serve the ports from what ``consumer``
    (the server, once given back its source allocation) holds: for a compute binding
    them at the source again (a revert). PortsUnmapped if that cannot be worked out:
    a port is never bound without the allocation that serves it."""
    held = ctx.placement.get_allocations(consumer).get("allocations") or {}
    out = move_spec(ctx, instance_uuid, spec)
    out["provider_mappings"] = mappings_from(ctx, instance_uuid, held)
    return out


def rebind(ctx: ConductorContext, instance_uuid: str,
           before: list[dict[str, Any]]) -> None:
    """The server's ports bound again as they were (``before``: read when the move
    started) where a rolled-back move changed them: the same host, the same
    ``allocation``. A port no longer the server's (deleted meanwhile) is left alone."""
    network = ctx.network
    if network is None:
        return
    for was in before:
        try:
            now = network.get_port(str(was["id"]))
        except nc.NotFound:
            continue
        host = was.get("binding:host_id") or ""
        allocation = (was.get("binding:profile") or {}).get("allocation")
        if (now.get("binding:host_id") or "") == host and \
                (now.get("binding:profile") or {}).get("allocation") == allocation:
            continue
        if not host:
            network.unbind_server_port(str(was["id"]), instance_uuid)
            continue
        network.bind_server_port(now, instance_uuid, host, allocation)


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


def bind_back(ctx: ConductorContext, instance_uuid: str, host: str) -> None:
    """A move its conductor never finished, given up: the server's ports bound to ``host``
    again, each with the provider of what the server holds there (the ports as they
    were before the move are not known any more)."""
    held = ctx.placement.get_allocations(instance_uuid).get("allocations") or {}
    try:
        mappings = mappings_from(ctx, instance_uuid, held)
    except PortsUnmapped as exc:
        LOG.warning("server %s: %s", instance_uuid, exc)
        mappings = {}
    bind_here(ctx, instance_uuid, host, mappings)


BINDING_EXTENDED = "binding-extended"


def bindings_extended(ctx: ConductorContext) -> bool:
    """Whether the network service offers multiple port bindings (an inactive binding on
    a live migration's destination, activated at its end)."""
    return ctx.network is not None and BINDING_EXTENDED in ctx.network.extensions()


def compute_can_bind(client: Any) -> bool:
    """Whether ``client`` (a ComputeRPC client, perhaps capped by [upgrade_levels]
    compute) may send a move step its request spec."""
    return bool(client.can_send_version(PORT_MOVES_SINCE))
