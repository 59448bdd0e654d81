"""The network service's pure rules: trait names, group ids, resource requests in both
formats, and reading them back (what the conductor, the computes and the API use)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.network.model import (
    MappingMissing,
    PortGroup,
    QosRule,
    binding_allocation,
    map_groups,
    port_groups,
    provider_resources,
    resource_request,
    same_subtree,
)
from stratus.network.traits import physnet_trait, vnic_type_trait

PORT = "3e299a06-cd69-4c42-96ad-da667832fe12"
BW = QosRule("c5897ad9-a713-4c9e-830b-5d2535f57a38", "pol", "minimum_bandwidth", "egress",
             1000)
BW_IN = QosRule("d5897ad9-a713-4c9e-830b-5d2535f57a38", "pol", "minimum_bandwidth",
                "ingress", 2000)
PPS = QosRule("b0bbe471-d797-4a37-8860-bb2be90d8f80", "pol", "minimum_packet_rate", "any",
              100)


def test_trait_names_as_neutron_normalises_them():
    assert physnet_trait("physnet1") == "CUSTOM_PHYSNET_PHYSNET1"
    assert physnet_trait("phys-net.A") == "CUSTOM_PHYSNET_PHYS_NET_A"
    assert vnic_type_trait("direct-physical") == "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"


def test_group_ids_are_neutrons():
    """uuid5(port, rule ids): the ids Neutron gives the same port and rules."""
    request = resource_request(PORT, "normal", "physnet1", "flat", [BW, PPS])
    assert request is not None
    bw, pps = request["request_groups"]
    assert bw["id"] == "350a8f66-a2d5-5007-bceb-138519429dd9"
    assert pps["id"] == "2a8a5685-9ab4-5664-982e-970e75c52390"
    assert request["same_subtree"] == [bw["id"], pps["id"]]
    assert bw["required"] == ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL"]
    assert pps == {"id": pps["id"], "required": ["CUSTOM_VNIC_TYPE_NORMAL"],
                   "resources": {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 100}}


def test_no_minimum_rule_no_request_and_tunnels_ask_for_the_tunnel_trait():
    limit = QosRule("r", "p", "bandwidth_limit", "egress", 10)
    assert resource_request(PORT, "normal", "physnet1", "flat", [limit]) is None
    assert resource_request(PORT, "normal", "physnet1", "flat", []) is None
    tunnel = resource_request(PORT, "direct", None, "vxlan", [BW])
    assert tunnel is not None
    assert tunnel["request_groups"][0]["required"] == ["CUSTOM_NETWORK_TUNNEL_PROVIDER",
                                                       "CUSTOM_VNIC_TYPE_DIRECT"]
    # A local network has neither a physnet nor tunnel endpoints: nothing to place.
    assert resource_request(PORT, "normal", None, "local", [BW]) is None


def test_legacy_format_is_one_bandwidth_group():
    legacy = resource_request(PORT, "normal", "physnet1", "flat", [BW, BW_IN, PPS],
                              legacy=True)
    assert legacy == {"required": ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL"],
                      "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                                    "NET_BW_IGR_KILOBIT_PER_SEC": 2000}}
    assert resource_request(PORT, "normal", None, "vxlan", [BW], legacy=True) is None


def _port(request: object, allocation: object = None) -> dict[str, object]:
    profile = {"allocation": allocation} if allocation is not None else {}
    return {"id": PORT, "resource_request": request, "binding:profile": profile}


def test_reading_groups_and_allocations_back_in_both_formats():
    extended = _port(resource_request(PORT, "normal", "physnet1", "flat", [BW, PPS]))
    bw, pps = port_groups(extended)
    assert (bw.suffix, bw.port_id) == (bw.group_id, PORT)
    assert same_subtree(extended) == [bw.suffix, pps.suffix]
    mappings = {bw.suffix: ["nic"], pps.suffix: ["agent"], "": ["root"]}
    assert binding_allocation(extended, mappings) == {bw.suffix: "nic", pps.suffix: "agent"}

    legacy = _port(resource_request(PORT, "normal", "physnet1", "flat", [BW], legacy=True))
    [group] = port_groups(legacy)
    assert group.suffix == PORT and group.group_id is None
    assert same_subtree(legacy) == []
    assert binding_allocation(legacy, {PORT: ["nic"]}) == "nic"

    assert binding_allocation(_port(None), {}) is None
    with pytest.raises(MappingMissing):
        binding_allocation(extended, {bw.suffix: ["nic"]})


def test_what_a_bound_port_holds_per_provider():
    request = resource_request(PORT, "normal", "physnet1", "flat", [BW, BW_IN, PPS])
    assert request is not None
    bw, pps = (g["id"] for g in request["request_groups"])
    same = _port(request, {bw: "nic", pps: "nic"})
    assert provider_resources(same) == {"nic": {
        "NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 2000,
        "NET_PACKET_RATE_KILOPACKET_PER_SEC": 100}}
    split = _port(request, {bw: "nic", pps: "agent"})
    assert set(provider_resources(split)) == {"nic", "agent"}
    assert provider_resources(_port(request)) == {}
    legacy = _port(resource_request(PORT, "normal", "physnet1", "flat", [BW], legacy=True),
                   "nic")
    assert provider_resources(legacy) == {"nic": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}


# ---- working the mapping out again from an allocation (revert, heal) -------------------


PHYS = ("CUSTOM_PHYSNET_A", "CUSTOM_PHYSNET_B")


def _group(suffix: str, physnet: str, kbps: int) -> PortGroup:
    return PortGroup("port", suffix, {"NET_BW_EGR_KILOBIT_PER_SEC": kbps}, (physnet,))


def test_map_groups_uses_traits_and_amounts():
    groups = [_group("g1", PHYS[0], 10), _group("g2", PHYS[1], 10), _group("g3", PHYS[0], 5)]
    allocation = {"root": {"VCPU": 1}, "nicA": {"NET_BW_EGR_KILOBIT_PER_SEC": 15},
                  "nicB": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}}
    traits = {"nicA": [PHYS[0]], "nicB": [PHYS[1]], "root": []}
    assert map_groups(groups, allocation, traits) == {"g1": "nicA", "g2": "nicB",
                                                      "g3": "nicA"}
    with pytest.raises(MappingMissing):
        map_groups([*groups, _group("g4", PHYS[1], 1)], allocation, traits)


def test_map_groups_backtracks():
    """A greedy first choice (the bigger NIC for the small group) would leave the big
    group nowhere."""
    groups = [_group("small", PHYS[0], 5), _group("big", PHYS[0], 20)]
    allocation = {"a": {"NET_BW_EGR_KILOBIT_PER_SEC": 20},
                  "b": {"NET_BW_EGR_KILOBIT_PER_SEC": 5}}
    traits = {"a": [PHYS[0]], "b": [PHYS[0]]}
    assert map_groups(groups, allocation, traits) == {"small": "b", "big": "a"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PHYS), st.integers(1, 20)), min_size=1,
                max_size=4),
       st.lists(st.tuples(st.sampled_from(PHYS), st.integers(0, 40)), min_size=1,
                max_size=4))
def test_map_groups_finds_an_assignment_exactly_when_one_exists(wanted, nics):
    """Against brute force: an answer only when some assignment fits, and every answer
    fits (traits held, amounts within what each provider holds)."""
    groups = [_group(f"g{i}", p, n) for i, (p, n) in enumerate(wanted)]
    allocation = {f"nic{j}": {"NET_BW_EGR_KILOBIT_PER_SEC": n} for j, (_, n) in
                  enumerate(nics)}
    traits = {f"nic{j}": [p] for j, (p, _) in enumerate(nics)}

    def fits(assignment: dict[str, str]) -> bool:
        used: dict[str, int] = {}
        for g in groups:
            rp = assignment[g.suffix]
            if g.required[0] not in traits[rp]:
                return False
            used[rp] = used.get(rp, 0) + g.resources["NET_BW_EGR_KILOBIT_PER_SEC"]
        return all(used[rp] <= allocation[rp]["NET_BW_EGR_KILOBIT_PER_SEC"] for rp in used)

    possible = any(fits(dict(zip([g.suffix for g in groups], choice, strict=True)))
                   for choice in itertools.product(allocation, repeat=len(groups)))
    try:
        found = map_groups(groups, allocation, traits)
    except MappingMissing:
        assert not possible
    else:
        assert fits(found)
