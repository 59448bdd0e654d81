"""The building blocks of the provider index: records, names, interned sets,
and one resource class's dense column.

See :mod:`.index` for how they fit together.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
UUID_JSON_WIDTH = 38  # a canonical uuid with its quotes
# Placement's integers are 32-bit; a request for more can never fit anywhere.
MAX_AMOUNT = 2_147_483_647

Slots = slice | np.ndarray  # which slots a vector operation looks at


@dataclass(frozen=True)
class InventoryRecord:
    rc_id: int
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int = 0


@dataclass(frozen=True)
class ProviderRecord:
    """One provider as the database has it (ids, not slots)."""

    id: int
    uuid: str
    parent_id: int | None
    root_id: int
    inventories: tuple[InventoryRecord, ...] = ()
    trait_ids: frozenset[int] = frozenset()
    aggregate_ids: frozenset[int] = frozenset()


@dataclass
class Names:
    """Id <-> name maps for resource classes, traits and aggregates."""

    rc_name: dict[int, str] = field(default_factory=dict)
    rc_id: dict[str, int] = field(default_factory=dict)
    trait_name: dict[int, str] = field(default_factory=dict)
    trait_id: dict[str, int] = field(default_factory=dict)
    agg_uuid: dict[int, str] = field(default_factory=dict)
    agg_id: dict[str, int] = field(default_factory=dict)

    def set_classes(self, pairs: Iterable[tuple[int, str]]) -> None:
        self.rc_name = {int(i): str(name) for i, name in pairs}
        self.rc_id = {name: i for i, name in self.rc_name.items()}

    def set_traits(self, pairs: Iterable[tuple[int, str]]) -> None:
        self.trait_name = {int(i): str(name) for i, name in pairs}
        self.trait_id = {name: i for i, name in self.trait_name.items()}

    def add_aggregates(self, pairs: Iterable[tuple[int, str]]) -> None:
        for agg_id, uuid in pairs:
            self.agg_uuid[int(agg_id)] = str(uuid)
            self.agg_id[str(uuid)] = int(agg_id)


class SetInterner:
    """Distinct frozensets, each with a small id and a count of providers using
    it; id 0 is the empty set."""

    def __init__(self) -> None:
        self.sets: list[frozenset[int]] = [frozenset()]
        self.used: list[int] = [0]
        self._ids: dict[frozenset[int], int] = {frozenset(): 0}

    def intern(self, items: frozenset[int]) -> int:
        found = self._ids.get(items)
        if found is None:
            found = self._ids[items] = len(self.sets)
            self.sets.append(items)
            self.used.append(0)
        return found

    def table(self, predicate: Callable[[frozenset[int]], bool]) -> np.ndarray:
        """A bool per set id: does the set satisfy ``predicate``?"""
        return np.fromiter((predicate(s) for s in self.sets), dtype=bool, count=len(self.sets))

    def any_used(self, table: np.ndarray) -> bool:
        """Does some provider have a set the table accepts?"""
        return any(ok and n for ok, n in zip(table.tolist(), self.used, strict=False))


_PLAIN = re.compile(r"[0-9A-Za-z-]*")


def quote_text(text: str) -> str:
    """``text`` as a JSON string: ``json.dumps``, without its cost for the usual
    uuid or name (nothing to escape)."""
    return f'"{text}"' if _PLAIN.fullmatch(text) else json.dumps(text)


def quote(text: str) -> bytes:
    """``text`` as a JSON string, encoded."""
    return quote_text(text).encode()


def resized(array: np.ndarray, size: int, fill: object) -> np.ndarray:
    out = np.full(size, fill, dtype=array.dtype)
    out[: min(len(array), size)] = array[:size]
    return out


class RcColumn:
    """One resource class, dense over slots."""

    def __init__(self, size: int) -> None:
        self.has = np.zeros(size, bool)
        self.cap = np.zeros(size, np.float64)     # (total - reserved) * allocation_ratio
        self.used = np.zeros(size, np.int64)
        self.free = np.full(size, -1.0)           # cap - used; -1 without the class
        self.min_unit = np.zeros(size, np.int32)
        self.max_unit = np.zeros(size, np.int32)
        self.step = np.ones(size, np.int32)
        self.count = 0          # providers with this class
        self.any_step = False   # some step_size > 1 (else the modulo is skipped)

    def _columns(self) -> dict[str, tuple[np.ndarray, object]]:
        return {"has": (self.has, False), "cap": (self.cap, 0.0), "used": (self.used, 0),
                "free": (self.free, -1.0), "min_unit": (self.min_unit, 0),
                "max_unit": (self.max_unit, 0), "step": (self.step, 1)}

    def resize(self, size: int) -> None:
        for name, (array, fill) in self._columns().items():
            setattr(self, name, resized(array, size, fill))

    def set(self, slot: int, inv: InventoryRecord) -> None:
        if not self.has[slot]:
            self.count += 1
        cap = (inv.total - inv.reserved) * inv.allocation_ratio
        self.has[slot] = True
        self.cap[slot] = cap
        self.used[slot] = inv.used
        self.free[slot] = cap - inv.used
        self.min_unit[slot] = min(inv.min_unit, MAX_AMOUNT)
        self.max_unit[slot] = min(inv.max_unit, MAX_AMOUNT)
        self.step[slot] = max(min(inv.step_size, MAX_AMOUNT), 1)
        self.any_step = self.any_step or inv.step_size > 1

    def remove(self, slot: int) -> None:
        if self.has[slot]:
            self.count -= 1
        for array, fill in self._columns().values():
            array[slot] = fill

    def fits(self, amount: int, at: Slots, units: bool = True) -> np.ndarray:
        """Bool per slot of ``at``: has the class and room for ``amount`` more
        (with ``units``, also min_unit, max_unit and step_size allow it)."""
        if amount > MAX_AMOUNT:
            return np.zeros(len(self.has[at]), bool)
        ok = self.free[at] >= amount
        ok &= self.max_unit[at] >= amount
        if units:
            ok &= self.min_unit[at] <= amount
            if self.any_step:
                ok &= amount % self.step[at] == 0
        return ok & self.has[at]

    def reasons(self, amount: int, at: Slots) -> list[tuple[str, np.ndarray]]:
        """Each way ``amount`` can be refused, as (reason, passes) in check order."""
        # Past every int32 inventory figure, and compared as int64 so it cannot overflow.
        wanted = np.int64(min(amount, MAX_AMOUNT + 1))
        has = self.has[at]
        # Without the class, only "no_inventory" applies.
        return [
            ("no_inventory", has),
            ("insufficient_capacity", ~has | (self.free[at] >= wanted)),
            ("below_min_unit", ~has | (self.min_unit[at] <= wanted)),
            ("above_max_unit", ~has | (self.max_unit[at] >= wanted)),
            ("step_size", ~has | (wanted % self.step[at] == 0)),
        ]
