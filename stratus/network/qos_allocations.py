"""A bound port's QoS policy changes: the allocation its server holds in Placement follows,
in place, as Neutron's QoS plugin does (design document 004's other half: the move
operations map ports to providers; this keeps the books right when the policy, or
the network's policy a port inherits, changes under a running server).

:func:`plan` (pure) works out, from the port's ``binding:profile.allocation`` (group
id -> provider) and the minimum rules before and after, what each provider's
amounts change by and what the binding's ``allocation`` becomes:

- only compute ports with an allocation are touched; a port that held nothing (no
  minimum rule when it was bound) stays so: Placement cannot be asked for a new
  provider without scheduling, so the new rules are enforced in the data plane only;
- a rule type the old policy lacked is ignored for the same reason;
- a type's group keeps its provider (the NIC it is on) under the new group id.

:func:`apply` then changes the consumer's allocation with one read-modify-write
against its consumer generation (retried on a concurrent update), and pushes the
reverse change on an undo stack, so a request that fails later (the port's own
write, its commit) leaves Placement as it found it. When the NIC lacks room
Placement refuses and the request is 409 ``QosPlacementAllocationUpdateConflict``
with nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from stratus.network import errors
from stratus.network.model import BW_CLASS, PLACEMENT_RULES, PPS_CLASS, QosRule, group_uuid
from stratus.undo import Undo

GENERATION_RETRIES = 4
Diff = dict[str, dict[str, int]]


@dataclass(frozen=True)
class Change:
    """What one port's policy change does in Placement."""

    port_id: str
    consumer: str                        # the server
    diff: Diff                           # provider -> class -> amount added (or taken)
    allocation: dict[str, str] | str | None   # the binding's new ``allocation``


def _classes(rule: QosRule) -> dict[str, int]:
    table = BW_CLASS if rule.type == "minimum_bandwidth" else PPS_CLASS
    return {table[rule.direction]: rule.value}


def plan(port: Mapping[str, Any], old_rules: Sequence[QosRule], new_rules: Sequence[QosRule]
         ) -> Change | None:
    """The change of ``port`` (as the store returns it, before the update) going from
    ``old_rules`` to ``new_rules`` (the rules in force, port's or network's); None when
    Placement has nothing to change."""
    if not str(port["device_owner"]).startswith("compute:"):
        return None
    allocation = port["binding"]["profile"].get("allocation")
    old = [r for r in old_rules if r.type in PLACEMENT_RULES]
    new = [r for r in new_rules if r.type in PLACEMENT_RULES]
    if not old or not allocation:
        return None
    new = [r for r in new if r.type in {o.type for o in old}]
    port_id = str(port["id"])
    providers: dict[str, str] = {}          # rule type -> provider
    updated: dict[str, str] = {}
    if isinstance(allocation, str):         # the legacy format: one provider, bandwidth only
        providers["minimum_bandwidth"] = allocation
    else:
        for group, provider in allocation.items():
            for kind in PLACEMENT_RULES:
                of_kind = [r for r in old if r.type == kind]
                if of_kind and group == group_uuid(port_id, (r.id for r in of_kind)):
                    providers[kind] = str(provider)
                    wanted = [r for r in new if r.type == kind]
                    if wanted:
                        updated[group_uuid(port_id, (r.id for r in wanted))] = str(provider)
    _same_packet_direction(old, new)
    diff: Diff = {}
    for sign, rules in ((-1, old), (1, new)):
        for rule in rules:
            provider = providers.get(rule.type)
            if provider is None:
                continue
            held = diff.setdefault(provider, {})
            for rc, amount in _classes(rule).items():
                held[rc] = held.get(rc, 0) + sign * amount
    diff = {rp: {rc: n for rc, n in d.items() if n} for rp, d in diff.items()}
    diff = {rp: d for rp, d in diff.items() if d}
    new_allocation: dict[str, str] | str | None
    if isinstance(allocation, str):
        new_allocation = allocation if any(r.type == "minimum_bandwidth" for r in new) else None
    else:
        new_allocation = updated or None
    if not diff and new_allocation == allocation:
        return None
    return Change(port_id, str(port["device_id"]), diff, new_allocation)


def _same_packet_direction(old: Sequence[QosRule], new: Sequence[QosRule]) -> None:
    """Neutron does not move a packet-rate guarantee between 'any' and a direction."""
    def kinds(rules: Sequence[QosRule]) -> set[bool]:
        return {r.direction == "any" for r in rules if r.type == "minimum_packet_rate"}

    if len(kinds(old) | kinds(new)) > 1:
        raise errors.NotImplementedYet(
            "Changing from direction-less QoS minimum packet rate rule to a "
            "direction-oriented minimum packet rate rule, or vice versa, is not supported.")


def inverse(diff: Diff) -> Diff:
    return {rp: {rc: -n for rc, n in d.items()} for rp, d in diff.items()}


def apply(placement: Any, change: Change, undo: Undo) -> None:
    """Add ``change.diff`` to the consumer's allocation in Placement, and push the undo."""
    if not change.diff:
        return
    if placement is None:
        raise errors.Conflict(f"Cannot change the allocation of server {change.consumer} for "
                              f"port {change.port_id}: this network service has no Placement "
                              "client configured.", "QosPlacementAllocationUpdateConflict")
    _add(placement, change.consumer, change.diff)
    undo.push(f"give back the QoS allocation change of port {change.port_id}",
              lambda: _add(placement, change.consumer, inverse(change.diff)))


def _add(placement: Any, consumer: str, diff: Diff) -> None:
    try:
        _read_modify_write(placement, consumer, diff)
    except httpx.TransportError as exc:
        raise errors.ServiceUnavailable(f"Placement did not answer ({exc}); the allocation "
                                        f"of server {consumer} is unchanged.") from None


def _holds(placement: Any, consumer: str, wanted: Mapping[str, Mapping[str, int]]) -> bool:
    try:
        now = placement.get_allocations(consumer).get("allocations") or {}
    except httpx.TransportError:
        raise errors.ServiceUnavailable(
            f"Placement did not answer whether the allocation of server {consumer} was "
            "changed; check it (GET /allocations/{consumer}) before trying again.") from None
    return {rp: dict(a["resources"]) for rp, a in now.items()} == {
        rp: dict(r) for rp, r in wanted.items() if r}


def _read_modify_write(placement: Any, consumer: str, diff: Diff) -> None:
    from stratus.placement.client import ConcurrentUpdate, PlacementClientError

    for _ in range(GENERATION_RETRIES):
        body = placement.get_allocations(consumer)
        held = {rp: dict(a["resources"]) for rp, a in (body.get("allocations") or {}).items()}
        if not held:
            raise errors.Conflict(f"Server {consumer} holds no allocation in Placement any "
                                  "more.", "PlacementAllocationRemoved")
        for rp, delta in diff.items():
            if rp not in held:
                raise errors.Conflict(f"Resource provider {rp} holds nothing of server "
                                      f"{consumer}.", "PlacementAllocationRpNotExists")
            for rc, amount in delta.items():
                value = held[rp].get(rc, 0) + amount
                if value > 0:
                    held[rp][rc] = value
                else:
                    held[rp].pop(rc, None)
        allocations = {rp: {"resources": r} for rp, r in held.items() if r}
        try:
            placement.put_allocations(consumer, allocations, body["project_id"],
                                      body["user_id"], body.get("consumer_generation"),
                                      body.get("consumer_type") or "INSTANCE")
            return
        except httpx.TransportError:
            # Sent, but the answer was lost: whether it was written decides whether it
            # must be given back, so look (a second failure is 503 with the doubt said).
            if _holds(placement, consumer, held):
                return
            raise
        except ConcurrentUpdate:
            continue
        except PlacementClientError as exc:
            raise errors.Conflict(
                f"Updating the allocation of server {consumer} by {diff} failed: "
                f"{exc.detail}", "QosPlacementAllocationUpdateConflict") from None
    raise errors.Conflict(f"The allocation of server {consumer} kept changing; try again.",
                          "PlacementAllocationGenerationConflict")

