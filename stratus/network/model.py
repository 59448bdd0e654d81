"""What a port asks of Placement, and what its binding says Placement gave it. Pure functions.

A port's **resource request** comes from its QoS policy (the port's own, else its
network's) and is computed when the port is read, never stored (Neutron's qos
plugin does the same)::

    minimum_bandwidth rules  -> one group: NET_BW_EGR/IGR_KILOBIT_PER_SEC,
                                required: the network's physnet trait (or the tunnel
                                trait) and the port's vNIC type trait
    minimum_packet_rate rules -> one group: NET_PACKET_RATE[_EGR|_IGR]_KILOPACKET_PER_SEC,
                                required: the vNIC type trait only
    same_subtree             -> every group's id (they must come from one device's subtree)

Each group's id is ``uuid5(port id, "rule id:rule id...")``, as Neutron makes it,
so it is stable for a port and its rules. Two formats (Neutron's extensions):
*extended* (``port-resource-request-groups``: ``{"request_groups": [...],
"same_subtree": [...]}``; the binding's ``allocation`` is ``{group id: provider}``)
and *legacy* (``port-resource-request``: one bandwidth group ``{"required",
"resources"}``; the ``allocation`` is one provider uuid).

The readers below take a port as the API returns it, in either format, so the
compute plane does not care which one the network service speaks.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stratus.network.traits import TUNNEL_TRAIT, physnet_trait, vnic_type_trait

EGRESS, INGRESS, ANY = "egress", "ingress", "any"
BW_CLASS = {EGRESS: "NET_BW_EGR_KILOBIT_PER_SEC", INGRESS: "NET_BW_IGR_KILOBIT_PER_SEC"}
PPS_CLASS = {ANY: "NET_PACKET_RATE_KILOPACKET_PER_SEC",
             EGRESS: "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC",
             INGRESS: "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC"}
TUNNEL_TYPES = frozenset({"vxlan", "geneve", "gre"})


@dataclass(frozen=True)
class RuleType:
    """One kind of QoS rule: its URL collection, body key and fields."""

    name: str                      # minimum_bandwidth
    value_field: str               # min_kbps
    directions: tuple[str, ...]    # () : the rule has no direction
    burst_field: str | None = None
    value_max: int = 2_147_483_647
    choices: tuple[int, ...] = ()      # the only values allowed (DSCP marks)

    @property
    def collection(self) -> str:
        return f"{self.name}_rules"

    @property
    def member(self) -> str:
        return f"{self.name}_rule"

    @property
    def default_direction(self) -> str:
        return EGRESS if self.directions else ""


RULE_TYPES: dict[str, RuleType] = {t.name: t for t in (
    RuleType("minimum_bandwidth", "min_kbps", (EGRESS, INGRESS)),
    RuleType("minimum_packet_rate", "min_kpps", (EGRESS, INGRESS, ANY)),
    RuleType("bandwidth_limit", "max_kbps", (EGRESS, INGRESS), burst_field="max_burst_kbps"),
    RuleType("dscp_marking", "dscp_mark", (), value_max=56, choices=(
        0, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 46, 48, 56)),
)}
PLACEMENT_RULES = ("minimum_bandwidth", "minimum_packet_rate")


@dataclass(frozen=True)
class QosRule:
    id: str
    policy_id: str
    type: str
    direction: str
    value: int
    burst: int = 0


def group_uuid(port_id: str, rule_ids: Iterable[str]) -> str:
    """Neutron's request group id: stable for a port and the rules behind the group."""
    return str(uuid.uuid5(uuid.UUID(port_id), ":".join(rule_ids)))


def resource_request(port_id: str, vnic_type: str, physnet: str | None, network_type: str,
                     rules: Sequence[QosRule], *, legacy: bool = False
                     ) -> dict[str, Any] | None:
    """The port's ``resource_request`` (None when its policy guarantees nothing)."""
    vnic = vnic_type_trait(vnic_type)
    bandwidth = [r for r in rules if r.type == "minimum_bandwidth"]
    packets = [r for r in rules if r.type == "minimum_packet_rate"]
    if physnet:
        net_trait: str | None = physnet_trait(physnet)
    else:
        net_trait = TUNNEL_TRAIT if network_type in TUNNEL_TYPES else None
    groups = []
    if bandwidth and net_trait is not None:
        groups.append({"id": group_uuid(port_id, (r.id for r in bandwidth)),
                       "required": [net_trait, vnic],
                       "resources": {BW_CLASS[r.direction]: r.value for r in bandwidth}})
    if legacy:
        # The old format knows one group, bandwidth only, and no tunnels.
        if not groups or not physnet:
            return None
        return {"required": groups[0]["required"], "resources": groups[0]["resources"]}
    if packets:
        groups.append({"id": group_uuid(port_id, (r.id for r in packets)),
                       "required": [vnic],
                       "resources": {PPS_CLASS[r.direction]: r.value for r in packets}})
    if not groups:
        return None
    return {"request_groups": groups, "same_subtree": [g["id"] for g in groups]}


# ---- reading a port as the API returns it (either format) --------------------------


@dataclass(frozen=True)
class PortGroup:
    """One group of a port's request. ``suffix`` names it in a candidates query and in
    Placement's ``mappings``: the group id (extended) or the port id (legacy), as Nova
    names them."""

    port_id: str
    group_id: str | None            # None in the legacy format
    resources: Mapping[str, int]
    required: tuple[str, ...]

    @property
    def suffix(self) -> str:
        return self.group_id or self.port_id


def port_groups(port: Mapping[str, Any]) -> list[PortGroup]:
    """The groups of ``port``'s resource request ([] if it asks for nothing)."""
    request = port.get("resource_request") or {}
    port_id = str(port["id"])
    if "request_groups" in request:
        return [PortGroup(port_id, str(g["id"]), dict(g.get("resources") or {}),
                          tuple(g.get("required") or ()))
                for g in request["request_groups"] if g.get("resources")]
    if request.get("resources"):
        return [PortGroup(port_id, None, dict(request["resources"]),
                          tuple(request.get("required") or ()))]
    return []


def same_subtree(port: Mapping[str, Any]) -> list[str]:
    """The suffixes that must be served from one subtree (empty unless two or more)."""
    request = port.get("resource_request") or {}
    ids = [str(i) for i in request.get("same_subtree") or ()]
    return ids if len(ids) > 1 else []


def is_extended(port: Mapping[str, Any]) -> bool:
    return "request_groups" in (port.get("resource_request") or {})


class MappingMissing(ValueError):
    """A port group has no provider in the mappings (a move without them, say)."""


def binding_allocation(port: Mapping[str, Any],
                       mappings: Mapping[str, Sequence[str]]) -> str | dict[str, str] | None:
    """The ``binding:profile.allocation`` of ``port`` given Placement's ``mappings``
    (suffix -> providers): ``{group id: provider}``, one provider (legacy), or None
    when the port asks for nothing."""
    groups = port_groups(port)
    if not groups:
        return None
    chosen: dict[str, str] = {}
    for group in groups:
        providers = mappings.get(group.suffix) or ()
        if not providers:
            raise MappingMissing(f"no provider serves request group {group.suffix} of "
                                 f"port {group.port_id}")
        chosen[group.suffix] = str(providers[0])
    if not is_extended(port):
        return chosen[groups[0].suffix]
    return chosen


def provider_resources(port: Mapping[str, Any],
                       allocation: str | Mapping[str, str] | None = None
                       ) -> dict[str, dict[str, int]]:
    """What the port holds per provider, according to its binding's ``allocation``
    (default: the port's own ``binding:profile``); {} when it holds nothing."""
    if allocation is None:
        allocation = (port.get("binding:profile") or {}).get("allocation")
    if not allocation:
        return {}
    out: dict[str, dict[str, int]] = {}
    for group in port_groups(port):
        rp = allocation if isinstance(allocation, str) else allocation.get(group.suffix)
        if not rp:
            continue
        held = out.setdefault(str(rp), {})
        for rc, amount in group.resources.items():
            held[rc] = held.get(rc, 0) + int(amount)
    return out


def map_groups(groups: Sequence[PortGroup],
               allocation: Mapping[str, Mapping[str, int]],
               traits: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Which provider of an existing ``allocation`` ({provider: {class: amount}}) serves
    each group, from the providers' ``traits``: Placement gives ``mappings`` only for a
    new candidate, so a revert (and a heal) work them out again, as Nova's
    ``map_requested_resources_to_providers`` does. Each group takes one provider that
    has its traits and still holds enough of its classes once the groups mapped before
    it took theirs; backtracking tries the other choices. MappingMissing if none fits."""
    have = {rp: set(traits.get(rp, ())) for rp in allocation}
    left = {rp: dict(amounts) for rp, amounts in allocation.items()}
    chosen: dict[str, str] = {}

    def place(i: int) -> bool:
        if i == len(groups):
            return True
        group = groups[i]
        for rp in sorted(left):
            if not set(group.required) <= have[rp]:
                continue
            if any(left[rp].get(rc, 0) < n for rc, n in group.resources.items()):
                continue
            for rc, n in group.resources.items():
                left[rp][rc] -= n
            chosen[group.suffix] = rp
            if place(i + 1):
                return True
            for rc, n in group.resources.items():
                left[rp][rc] += n
            del chosen[group.suffix]
        return False

    if not place(0):
        raise MappingMissing(
            "no provider of the allocation can serve request group(s) "
            + ", ".join(g.suffix for g in groups))
    return dict(chosen)
