"""The NoValidHost reason category (the metrics' label) for each kind of refusal the
scheduler words today: one small stable word per cause."""

from __future__ import annotations

import pytest

from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.manager import explain_counts
from stratus.scheduler.no_valid_host_category import CATEGORIES, category

NOTHING = "Placement has no allocation candidates for this request."


def explained(groups: dict[str, int], trees: dict[str, int] | None = None) -> NoValidHost:
    return NoValidHost(NOTHING, explain_counts({
        "groups": {"": {"providers_matching": 0, "providers_excluded": groups}},
        "trees_excluded": trees or {}}))


@pytest.mark.parametrize(("error", "expected"), [
    (explained({"insufficient_capacity:VCPU": 4}), "capacity"),
    (explained({"no_inventory:CUSTOM_GPU": 3}), "capacity"),
    (explained({}, {"root_required": 2}), "host_disabled"),
    # The constraint that removed the most hosts names the refusal.
    (explained({"insufficient_capacity:VCPU": 1}, {"root_required": 3}), "host_disabled"),
    (explained({"missing_trait:HW_CPU_X86_AVX512F": 5}), "traits"),
    (explained({"not_in_aggregate": 5}), "aggregates"),
    (NoValidHost("Placement offered 2 host(s); none passed the scheduler's checks.",
                 {"compute service down": 2}), "host_down"),
    (NoValidHost("Placement offered 2 host(s); none passed the scheduler's checks.",
                 {"server group anti-affinity: member already here": 2}), "group_policy"),
    (NoValidHost("Placement offered 2 host(s); none passed the scheduler's checks.",
                 {"host not among forced hosts": 2}), "host_filters"),
    (NoValidHost("No host could be claimed for instance x (0 of 1 placed).",
                 {"claim refused by Placement (taken meanwhile)": 3}), "claim_race"),
    (NoValidHost("The request cannot be scheduled: bad extra spec"), "invalid_request"),
    (NoValidHost("Placement refused the request: no such trait"), "invalid_request"),
    (NoValidHost(NOTHING + " (Placement cannot explain why: 404 from "
                 "/allocation_candidates/explain)"), "unexplained"),
    (NoValidHost("availability zone 'az9' has no hosts"), "availability_zone"),
    (NoValidHost("something new"), "other"),
])
def test_category(error: NoValidHost, expected: str) -> None:
    assert category(error) == expected
    assert expected in CATEGORIES
