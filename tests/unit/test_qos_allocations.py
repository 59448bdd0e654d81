"""What a bound port's QoS policy change does in Placement (stratus.network.qos_allocations
.plan): Neutron's QoS plugin's arithmetic, as pure functions."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from stratus.network import errors
from stratus.network.model import QosRule, group_uuid
from stratus.network.qos_allocations import Change, inverse, plan

PORT = str(uuid.uuid4())
NIC, AGENT = "nic-rp", "agent-rp"


def bw(rule_id: str, kbps: int, direction: str = "egress") -> QosRule:
    return QosRule(rule_id, "p", "minimum_bandwidth", direction, kbps)


def pps(rule_id: str, kpps: int, direction: str = "any") -> QosRule:
    return QosRule(rule_id, "p", "minimum_packet_rate", direction, kpps)


def port(allocation: Any, owner: str = "compute:nova") -> dict[str, Any]:
    return {"id": PORT, "device_owner": owner, "device_id": "server-1",
            "binding": {"profile": {"allocation": allocation} if allocation else {}}}


def test_a_bigger_guarantee_on_the_same_nic() -> None:
    old, new = [bw("a", 1000)], [bw("b", 3000)]
    change = plan(port({group_uuid(PORT, ["a"]): NIC}), old, new)
    assert change == Change(PORT, "server-1", {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}},
                            {group_uuid(PORT, ["b"]): NIC})
    assert inverse(change.diff) == {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": -2000}}


def test_each_kind_stays_on_its_own_provider_and_a_new_kind_is_ignored() -> None:
    old = [bw("a", 1000), pps("c", 100)]
    new = [bw("b", 2000), pps("d", 50)]
    allocation = {group_uuid(PORT, ["a"]): NIC, group_uuid(PORT, ["c"]): AGENT}
    change = plan(port(allocation), old, new)
    assert change is not None
    assert change.diff == {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                           AGENT: {"NET_PACKET_RATE_KILOPACKET_PER_SEC": -50}}
    assert change.allocation == {group_uuid(PORT, ["b"]): NIC,
                                 group_uuid(PORT, ["d"]): AGENT}
    # A packet-rate rule the bound port never had takes nothing (no provider for it).
    added = plan(port({group_uuid(PORT, ["a"]): NIC}), [bw("a", 1000)],
                 [bw("b", 2000), pps("d", 50)])
    assert added is not None and added.diff == {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}


def test_direction_change_and_removal() -> None:
    moved = plan(port({group_uuid(PORT, ["a"]): NIC}), [bw("a", 1000, "ingress")],
                 [bw("b", 1000, "egress")])
    assert moved is not None and moved.diff == {NIC: {"NET_BW_IGR_KILOBIT_PER_SEC": -1000,
                                                      "NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    gone = plan(port({group_uuid(PORT, ["a"]): NIC}), [bw("a", 1000)], [])
    assert gone is not None and gone.allocation is None
    assert gone.diff == {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": -1000}}


@pytest.mark.parametrize("allocation,owner,old", [
    (None, "compute:nova", [bw("a", 1000)]),          # bound with nothing held
    ({"g": NIC}, "network:dhcp", [bw("a", 1000)]),     # not a server's port
    ({"g": NIC}, "compute:nova", []),                   # no minimum rule before
])
def test_nothing_to_change(allocation, owner, old) -> None:
    assert plan(port(allocation, owner), old, [bw("b", 5000)]) is None


def test_any_direction_packet_rate_does_not_become_directional() -> None:
    with pytest.raises(errors.NotImplementedYet):
        plan(port({group_uuid(PORT, ["c"]): AGENT}), [pps("c", 100)],
             [pps("d", 100, "egress")])


def test_the_legacy_format_keeps_one_provider() -> None:
    change = plan(port(NIC), [bw("a", 1000)], [bw("b", 1500)])
    assert change is not None and change.allocation == NIC
    assert change.diff == {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": 500}}


class FakePlacement:
    """Placement's allocations of one consumer, a PUT that may fail the ways a real one
    does: lost after it was written, never arrived, or refused for capacity."""

    def __init__(self, fail: str | None = None) -> None:
        self.held = {"root": {"VCPU": 1}, NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
        self.generation, self.fail = 1, fail

    def get_allocations(self, consumer: str) -> dict[str, Any]:
        return {"allocations": {rp: {"resources": dict(r)} for rp, r in self.held.items()},
                "consumer_generation": self.generation, "project_id": "p", "user_id": "u"}

    def put_allocations(self, consumer: str, allocations: dict[str, Any], project_id: str,
                        user_id: str, generation: int, consumer_type: str) -> None:
        import httpx

        from stratus.placement.client import Conflict

        assert generation == self.generation
        if self.fail == "refused":
            raise Conflict("PUT", "/allocations", 409, None, "exceeds capacity")
        if self.fail == "unsent":
            raise httpx.ConnectError("refused")
        self.held = {rp: dict(a["resources"]) for rp, a in allocations.items()}
        self.generation += 1
        if self.fail == "lost":
            raise httpx.ReadError("connection reset")


def test_applying_and_undoing_a_change() -> None:
    from stratus.network.qos_allocations import apply
    from stratus.undo import Undo

    placement, undo = FakePlacement(), Undo()
    change = Change(PORT, "server-1", {NIC: {"NET_BW_EGR_KILOBIT_PER_SEC": 500}}, None)
    apply(placement, change, undo)
    assert placement.held[NIC] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1500}
    undo.rollback()
    assert placement.held[NIC] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}

    # An answer lost after the write counts as written (and is given back on undo).
    lost, undo = FakePlacement("lost"), Undo()
    apply(lost, change, undo)
    assert lost.held[NIC] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1500}

    for fail, status in (("refused", 409), ("unsent", 503)):
        other, undo = FakePlacement(fail), Undo()
        with pytest.raises(errors.NetworkAPIError) as refused:
            apply(other, change, undo)
        assert refused.value.status == status
        assert other.held[NIC] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}
