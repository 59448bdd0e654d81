"""Properties of the capacity and unit arithmetic the allocation writer relies on."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from stratus.placement.model import MAX_INT, Inventory, amount_allowed, capacity, fits
from stratus.placement.store.allocations import refusal

amounts = st.integers(min_value=1, max_value=MAX_INT)
ratios = st.floats(min_value=0.0, max_value=64.0, allow_nan=False, allow_infinity=False)


@st.composite
def inventories(draw: st.DrawFn) -> Inventory:
    total = draw(st.integers(min_value=1, max_value=100_000))
    reserved = draw(st.integers(min_value=0, max_value=total))
    min_unit = draw(st.integers(min_value=1, max_value=total))
    max_unit = draw(st.integers(min_value=min_unit, max_value=MAX_INT))
    step = draw(st.integers(min_value=1, max_value=max(1, total)))
    return Inventory("VCPU", total, reserved, min_unit, max_unit, step, draw(ratios))


@given(inventories(), st.integers(min_value=0, max_value=10**7), amounts)
def test_fits_decides_like_placements_float_comparison(inv, used, amount):
    # Placement refuses when (total - reserved) * ratio < used + amount, in floats.
    # Rounding capacity down first must not change a single decision.
    exact_float = (inv.total - inv.reserved) * inv.allocation_ratio
    assert fits(inv, used, amount) == (used + amount <= exact_float)


@given(inventories(), amounts)
def test_allowed_amounts_respect_every_unit_rule(inv, amount):
    allowed = amount_allowed(inv, amount)
    assert allowed == (inv.min_unit <= amount <= inv.max_unit and amount % inv.step_size == 0)
    if allowed:
        assert amount // inv.step_size * inv.step_size == amount


@given(inventories(), st.integers(min_value=0, max_value=10**6), amounts,
       st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)))
def test_refusal_only_lets_an_over_capacity_write_through_if_no_worse(inv, others, requested,
                                                                    before):
    accepted = refusal(inv, others, requested, before) is None
    after = others + requested
    if after <= capacity(inv):
        assert accepted
    else:
        assert accepted == (before is not None and after <= before)


@given(inventories(), st.lists(st.integers(min_value=1, max_value=5_000), max_size=40))
def test_claims_checked_one_after_another_never_exceed_capacity(inv, claims):
    # What the generation compare-and-swap guarantees: each claim is checked
    # against every claim committed before it. Starting within capacity, the
    # books never go over it, and every refused claim really did not fit.
    used = 0
    for amount in claims:
        if refusal(inv, used, amount, used if used else None) is None:
            used += amount
        else:
            assert used + amount > capacity(inv)
        assert used <= capacity(inv)


@given(inventories(), st.lists(st.integers(min_value=1, max_value=5_000), min_size=1,
                               max_size=10), st.integers(min_value=0, max_value=10**5))
def test_one_write_for_many_consumers_is_judged_on_its_sum(inv, parts, others):
    # POST /allocations with several consumers on one provider and class: the
    # sum must fit, even when every part fits on its own (Placement bug 1778743).
    assume(others <= capacity(inv))
    total = sum(parts)
    accepted = refusal(inv, others, total, others if others else None) is None
    assert accepted == (others + total <= capacity(inv))
