"""The NoValidHost reason category (the metrics' label): the explanation's own when the
error carries one, else derived from its counts into the same small vocabulary."""

from __future__ import annotations

import pytest

from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.explanation import Category
from stratus.scheduler.no_valid_host_category import CATEGORIES, category

NOTHING = "Placement has no allocation candidates for this request."
FILTERED = "Placement offered 2 host(s); none passed the scheduler's checks."


def test_the_explanations_category_wins() -> None:
    error = NoValidHost("x", {"compute service down": 2}, {"category": Category.BATCH.value,
                                                           "message": "m"})
    assert category(error) == "batch"


@pytest.mark.parametrize(("error", "expected"), [
    (NoValidHost(NOTHING, {"placement: insufficient_capacity:VCPU (providers)": 4}),
     "capacity"),
    (NoValidHost(NOTHING, {"placement: root_required (hosts)": 2}), "disabled"),
    # The constraint that removed the most hosts names the refusal.
    (NoValidHost(NOTHING, {"placement: insufficient_capacity:VCPU (providers)": 1,
                           "placement: root_required (hosts)": 3}), "disabled"),
    (NoValidHost(NOTHING, {"placement: missing_trait:HW_CPU_X86_AVX512F (providers)": 5}),
     "constraint"),
    (NoValidHost(FILTERED, {"compute service down": 2}), "down"),
    (NoValidHost(FILTERED, {"server group anti-affinity: member already here": 2}),
     "constraint"),
    (NoValidHost("No host could be claimed for instance x (0 of 1 placed).",
                 {"claim refused by Placement (taken meanwhile)": 3}), "conflict"),
    (NoValidHost("The request cannot be scheduled: bad extra spec"), "invalid_request"),
    (NoValidHost("Placement refused the request: no such trait"), "invalid_request"),
    (NoValidHost("something new"), "unknown"),
])
def test_derived_without_an_explanation(error: NoValidHost, expected: str) -> None:
    assert category(error) == expected
    assert expected in CATEGORIES
