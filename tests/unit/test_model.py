"""The inventory arithmetic every placement module shares."""

from __future__ import annotations

import pytest

from stratus.placement import errors, model
from stratus.placement.model import Inventory


def test_defaults_match_placement():
    inv = Inventory("VCPU", total=8)
    assert inv.as_dict() == {
        "total": 8, "reserved": 0, "min_unit": 1, "max_unit": 2_147_483_647,
        "step_size": 1, "allocation_ratio": 1.0,
    }


def test_from_fields_fills_defaults_and_ignores_extras():
    inv = Inventory.from_fields("DISK_GB", {"total": 10, "reserved": 2, "id": 5})
    assert inv == Inventory("DISK_GB", total=10, reserved=2)


@pytest.mark.parametrize(
    ("total", "reserved", "ratio", "expected"),
    [
        (8, 0, 1.0, 8),
        (8, 2, 1.0, 6),
        (8, 0, 16.0, 128),
        (10, 1, 1.5, 13),  # 13.5 rounds down
        (3, 0, 0.5, 1),
        (4, 4, 2.0, 0),
        (4, 5, 1.0, -1),
    ],
)
def test_capacity(total, reserved, ratio, expected):
    inv = Inventory("VCPU", total=total, reserved=reserved, allocation_ratio=ratio)
    assert model.capacity(inv) == expected
    assert inv.capacity == expected


@pytest.mark.parametrize(
    ("amount", "ok"),
    [(1, False), (2, True), (3, False), (4, True), (8, True), (10, False), (0, False)],
)
def test_amount_allowed_units(amount, ok):
    inv = Inventory("VCPU", total=16, min_unit=2, max_unit=8, step_size=2)
    assert model.amount_allowed(inv, amount) is ok


def test_check_amount_raises_placement_message():
    inv = Inventory("VCPU", total=16, max_unit=4)
    model.check_amount(inv, 4, "rp-1")
    with pytest.raises(errors.BadRequest) as info:
        model.check_amount(inv, 5, "rp-1")
    assert "'VCPU' on resource provider 'rp-1'" in info.value.detail
    assert "violate inventory constraints" in info.value.detail


def test_fits_uses_capacity_with_ratio():
    inv = Inventory("VCPU", total=4, reserved=1, allocation_ratio=2.0)  # capacity 6
    assert model.fits(inv, used=5, amount=1)
    assert not model.fits(inv, used=5, amount=2)


def test_capacity_acceptable_reserved_equal_total_only_when_allowed():
    full = Inventory("VCPU", total=4, reserved=4)
    assert not model.capacity_acceptable(full, reserved_may_equal_total=False)
    assert model.capacity_acceptable(full, reserved_may_equal_total=True)
    over = Inventory("VCPU", total=4, reserved=5)
    assert not model.capacity_acceptable(over, reserved_may_equal_total=True)


# The store's guard for inventories built outside the HTTP schemas (the reshaper).

from stratus.placement.store.inventories import build  # noqa: E402


def test_build_fills_defaults_and_makes_integral_floats_ints():
    inv = build("VCPU", {"total": 4.0, "allocation_ratio": 2})
    assert inv == Inventory("VCPU", total=4, allocation_ratio=2.0)
    assert isinstance(inv.total, int)
    assert isinstance(inv.allocation_ratio, float)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"total": 0},
        {"total": -3},
        {"total": 2_147_483_648},
        {"total": 4.5},
        {"total": True},
        {"total": "4"},
        {"total": 4, "reserved": -1},
        {"total": 4, "step_size": 0},
        {"total": 4, "allocation_ratio": float("nan")},
        {"total": 4, "allocation_ratio": float("inf")},
        {"total": 4, "allocation_ratio": "1.0"},
        {"total": 4, "allocation_ratio": 1e39},
    ],
)
def test_build_refuses_values_the_columns_cannot_hold(fields):
    with pytest.raises(errors.BadRequest):
        build("VCPU", fields)
