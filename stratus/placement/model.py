"""Placement's inventory arithmetic: pure functions, no database, no HTTP.

Every module that asks "does this amount fit?" (allocations, candidates, the
resources filter on provider lists, the reshaper) uses these, so capacity and
unit rules live in one place.

- ``capacity(inv)``: how much of a class may be allocated in total,
  ``int((total - reserved) * allocation_ratio)``.
- ``amount_allowed(inv, amount)``: the amount respects min_unit, max_unit
  and step_size (a yes/no for filters that count rejections).
- ``check_amount(inv, amount, provider_uuid)``: the same rule, raising
  Placement's 400 for a write that violates it.
- ``fits(inv, used, amount)``: capacity is not exceeded by ``used + amount``.

Functions take anything with the inventory's attribute names (an
:class:`Inventory`, or a SQLAlchemy row selected from ``inventories``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from stratus.placement import errors

MAX_INT = 2_147_483_647
# The largest single-precision float a FLOAT column keeps (allocation_ratio's bound).
SQL_SP_FLOAT_MAX = 3.40282e38

DEFAULTS: dict[str, Any] = {
    "reserved": 0,
    "min_unit": 1,
    "max_unit": MAX_INT,
    "step_size": 1,
    "allocation_ratio": 1.0,
}
FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")


class HasCapacity(Protocol):
    # Read-only members, so frozen dataclasses and database rows both qualify.
    @property
    def total(self) -> int: ...
    @property
    def reserved(self) -> int: ...
    @property
    def allocation_ratio(self) -> float: ...


class HasUnits(Protocol):
    @property
    def min_unit(self) -> int: ...
    @property
    def max_unit(self) -> int: ...
    @property
    def step_size(self) -> int: ...


@dataclass(frozen=True)
class Inventory:
    """One resource class's inventory on one provider."""

    resource_class: str
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    @classmethod
    def from_fields(cls, resource_class: str, fields: Mapping[str, Any]) -> Inventory:
        """Build from an API body or a row mapping; missing optional fields get defaults."""
        values = {**DEFAULTS, **{k: v for k, v in fields.items() if k in FIELDS}}
        return cls(resource_class=resource_class, **values)

    @property
    def capacity(self) -> int:
        return capacity(self)

    def as_dict(self) -> dict[str, Any]:
        """The API's rendering of the inventory's fields (no class, no generation)."""
        return {name: getattr(self, name) for name in FIELDS}


def capacity(inv: HasCapacity) -> int:
    """Allocatable amount: (total - reserved) scaled by the overcommit ratio, rounded down."""
    return int((inv.total - inv.reserved) * inv.allocation_ratio)


def amount_allowed(inv: HasUnits, amount: int) -> bool:
    """True if one allocation of ``amount`` respects min_unit, max_unit and step_size."""
    return inv.min_unit <= amount <= inv.max_unit and amount % inv.step_size == 0


def check_amount(
    inv: HasUnits, amount: int, provider_uuid: str = "", resource_class: str | None = None
) -> None:
    """Raise Placement's 400 if ``amount`` violates the inventory's unit rules.

    ``resource_class`` defaults to ``inv.resource_class`` when ``inv`` has one.
    Callers skip this for an amount of 0: Placement never checks those.
    """
    if not amount_allowed(inv, amount):
        if resource_class is None:
            resource_class = str(getattr(inv, "resource_class", ""))
        raise errors.BadRequest(
            f"Unable to create allocation for '{resource_class}' on resource provider "
            f"'{provider_uuid}'. The requested amount would violate inventory constraints."
        )


def fits(inv: HasCapacity, used: int, amount: int) -> bool:
    """True if ``amount`` more on top of ``used`` stays within capacity."""
    return used + amount <= capacity(inv)


def capacity_acceptable(inv: HasCapacity, reserved_may_equal_total: bool) -> bool:
    """Whether an inventory being written has acceptable capacity.

    Placement refuses an inventory with no allocatable capacity; from 1.26
    ``reserved == total`` (capacity exactly 0) is allowed, negative never is.
    """
    cap = capacity(inv)
    return cap >= 0 if reserved_may_equal_total else cap > 0
