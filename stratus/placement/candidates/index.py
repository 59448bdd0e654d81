"""An in-memory, columnar index of resource providers, kept current incrementally.

Every provider gets a *slot* (a small integer). Per slot, numpy columns hold
the database id, the parent and root slots, and two *signatures*: the id of the
provider's trait set and of its aggregate set. Sets are interned, so a filter
such as "has HW_CPU_X86_AVX2 and not COMPUTE_STATUS_DISABLED" is evaluated once
per distinct trait set (a few hundred in a large cloud, not one per provider)
and then gathered over all slots in one vector operation.

Inventories live in one :class:`RcColumn` per resource class, a row per
provider that has the class, with the usage summed from allocations. "Which
providers can take 4 VCPU" is a vector comparison over that column.

Slots are appended in load order (database id order after a full load) and
never reused, so iterating slots in order is a stable, deterministic order.
Removed providers leave a dead slot; a refresh reloads everything once dead
slots make up a quarter of the index.

The index holds no connection and does no I/O: :mod:`.changes` reads the
database and calls :meth:`ProviderIndex.apply`; unit tests call it directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# Placement's integers are 32-bit; a request for more can never fit anywhere.
MAX_AMOUNT = 2_147_483_647


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
            self.agg_uuid[agg_id] = uuid
            self.agg_id[uuid] = agg_id


class SetInterner:
    """Distinct frozensets, each with a small id; id 0 is the empty set."""

    def __init__(self) -> None:
        self.sets: list[frozenset[int]] = [frozenset()]
        self._ids: dict[frozenset[int], int] = {frozenset(): 0}

    def intern(self, items: frozenset[int]) -> int:
        found = self._ids.get(items)
        if found is None:
            found = self._ids[items] = len(self.sets)
            self.sets.append(items)
        return found

    def mask(self, predicate: Callable[[frozenset[int]], bool]) -> np.ndarray:
        """A bool per set id: does the set satisfy ``predicate``?"""
        return np.fromiter((predicate(s) for s in self.sets), dtype=bool, count=len(self.sets))


def _grow(array: np.ndarray, size: int, fill: object) -> np.ndarray:
    if size <= len(array):
        return array
    bigger = np.full(max(size, 2 * len(array), 16), fill, dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


class RcColumn:
    """One resource class: a row per provider holding inventory of it."""

    _INT_COLS = ("total", "reserved", "min_unit", "max_unit", "step", "used")

    def __init__(self) -> None:
        self.n = 0
        self.slot = np.full(16, -1, np.int32)
        self.total = np.zeros(16, np.int64)
        self.reserved = np.zeros(16, np.int64)
        self.min_unit = np.zeros(16, np.int64)
        self.max_unit = np.zeros(16, np.int64)
        self.step = np.ones(16, np.int64)
        self.used = np.zeros(16, np.int64)
        self.ratio = np.ones(16, np.float64)
        # (total - reserved) * ratio, as Placement compares it (no rounding).
        self.cap = np.zeros(16, np.float64)
        self.row_of: dict[int, int] = {}
        self._free: list[int] = []

    def set(self, slot: int, inv: InventoryRecord) -> None:
        row = self.row_of.get(slot)
        if row is None:
            row = self._free.pop() if self._free else self._append()
            self.row_of[slot] = row
        self.slot[row] = slot
        self.total[row] = inv.total
        self.reserved[row] = inv.reserved
        self.min_unit[row] = inv.min_unit
        self.max_unit[row] = inv.max_unit
        self.step[row] = max(inv.step_size, 1)
        self.used[row] = inv.used
        self.ratio[row] = inv.allocation_ratio
        self.cap[row] = (inv.total - inv.reserved) * inv.allocation_ratio

    def _append(self) -> int:
        row = self.n
        self.n += 1
        if self.n > len(self.slot):
            size = 2 * len(self.slot)
            self.slot = _grow(self.slot, size, -1)
            for name in self._INT_COLS:
                setattr(self, name, _grow(getattr(self, name), size, 1 if name == "step" else 0))
            self.ratio = _grow(self.ratio, size, 1.0)
            self.cap = _grow(self.cap, size, 0.0)
        return row

    def remove(self, slot: int) -> None:
        row = self.row_of.pop(slot, None)
        if row is not None:
            self.slot[row] = -1
            self.cap[row] = -1.0
            self._free.append(row)

    def live_rows(self) -> np.ndarray:
        return np.flatnonzero(self.slot[: self.n] >= 0)

    def row_checks(self, amount: int) -> dict[str, np.ndarray]:
        """Per live row, each reason ``amount`` would be refused (all False: it fits)."""
        n = self.n
        live = self.slot[:n] >= 0
        amount = min(amount, MAX_AMOUNT + 1)
        return {
            "capacity": live & (self.used[:n] + amount > self.cap[:n]),
            "min_unit": live & (self.min_unit[:n] > amount),
            "max_unit": live & (self.max_unit[:n] < amount),
            "step_size": live & (amount % self.step[:n] != 0),
        }

    def fits(self, amount: int, n_slots: int, units: bool = True) -> np.ndarray:
        """Bool per slot: the provider has this class and can take ``amount`` more
        (capacity, and with ``units`` also min_unit/max_unit/step_size)."""
        out = np.zeros(n_slots, bool)
        n = self.n
        if amount > MAX_AMOUNT or n == 0:
            return out
        ok = (self.slot[:n] >= 0) & (self.used[:n] + amount <= self.cap[:n])
        if units:
            ok &= (self.min_unit[:n] <= amount) & (amount % self.step[:n] == 0)
        ok &= self.max_unit[:n] >= amount
        out[self.slot[:n][ok]] = True
        return out

    def has(self, n_slots: int) -> np.ndarray:
        out = np.zeros(n_slots, bool)
        out[self.slot[: self.n][self.slot[: self.n] >= 0]] = True
        return out

    # scalar access for the per-tree solver
    def room(self, slot: int) -> tuple[float, int, int] | None:
        """(capacity, used, max_unit) of the provider's row, or None without inventory."""
        row = self.row_of.get(slot)
        if row is None:
            return None
        return float(self.cap[row]), int(self.used[row]), int(self.max_unit[row])


class ProviderIndex:
    """Providers, their trees, inventories, usage, traits and aggregates."""

    def __init__(self) -> None:
        self.n = 0
        self.db_id = np.zeros(16, np.int64)
        self.parent = np.full(16, -1, np.int32)
        self.root = np.zeros(16, np.int32)
        self.trait_sig = np.zeros(16, np.int32)
        self.agg_sig = np.zeros(16, np.int32)
        self.alive = np.zeros(16, bool)
        self.uuids: list[str | None] = []
        self.slot_of_id: dict[int, int] = {}
        self.slot_of_uuid: dict[str, int] = {}
        self.traits = SetInterner()
        self.aggs = SetInterner()
        self.rc: dict[int, RcColumn] = {}
        self.names = Names()
        # Trees of more than one provider: root slot -> member slots, sorted.
        self.members: dict[int, list[int]] = {}
        self.agg_members: dict[int, set[int]] = {}
        self.sharing: set[int] = set()
        self.nested = 0  # providers that have a parent
        self.dead = 0
        self.seq: int | None = None  # change counter value this index reflects
        self._anchor_cache: dict[int, frozenset[int]] = {}
        self.fragments: dict[int, str] = {}  # rendered summaries, see render.py

    # ---- reading ------------------------------------------------------------------

    @property
    def has_trees(self) -> bool:
        return self.nested > 0

    def live_slots(self) -> np.ndarray:
        return np.flatnonzero(self.alive[: self.n])

    def roots_mask(self) -> np.ndarray:
        n = self.n
        return self.alive[:n] & (self.parent[:n] < 0)

    def tree(self, root: int) -> list[int]:
        """The slots of the tree rooted at ``root``, in slot order."""
        return self.members.get(root) or [root]

    def trait_set(self, slot: int) -> frozenset[int]:
        return self.traits.sets[self.trait_sig[slot]]

    def agg_set(self, slot: int) -> frozenset[int]:
        return self.aggs.sets[self.agg_sig[slot]]

    def trait_mask(self, predicate: Callable[[frozenset[int]], bool]) -> np.ndarray:
        """Bool per slot: the provider's own trait set satisfies ``predicate``."""
        return self.traits.mask(predicate)[self.trait_sig[: self.n]] & self.alive[: self.n]

    def agg_mask(self, predicate: Callable[[frozenset[int]], bool]) -> np.ndarray:
        return self.aggs.mask(predicate)[self.agg_sig[: self.n]] & self.alive[: self.n]

    def ancestors(self, slot: int) -> list[int]:
        """``slot`` and its ancestors up to the root."""
        out = [slot]
        while self.parent[out[-1]] >= 0:
            out.append(int(self.parent[out[-1]]))
        return out

    def anchors(self, slot: int) -> frozenset[int]:
        """Roots of every tree with a provider sharing an aggregate with ``slot``.

        These are the trees a sharing provider lends its inventory to (its own
        tree included whenever it belongs to any aggregate).
        """
        found = self._anchor_cache.get(slot)
        if found is None:
            members: set[int] = set()
            for agg in self.agg_set(slot):
                members |= self.agg_members.get(agg, set())
            found = frozenset(int(self.root[m]) for m in members)
            self._anchor_cache[slot] = found
        return found

    def provider_classes(self, slot: int) -> list[int]:
        """Resource class ids the provider has inventory of."""
        return [rc for rc, col in self.rc.items() if slot in col.row_of]

    # ---- writing --------------------------------------------------------------------

    def apply(self, records: Iterable[ProviderRecord], removed_ids: Iterable[int] = ()) -> None:
        """Make the index reflect these providers (upserted) and removals."""
        records = list(records)
        touched_roots: set[int] = set()
        tree_changed = False
        for pid in removed_ids:
            slot = self.slot_of_id.get(pid)
            if slot is not None:
                touched_roots.add(int(self.root[slot]))
                self._remove(slot)
                tree_changed = True
        fresh = {r.id for r in records if r.id not in self.slot_of_id}
        for rec in records:
            if rec.id in fresh and rec.id not in self.slot_of_id:
                self._new_slot(rec)
        for rec in records:
            slot = self.slot_of_id[rec.id]
            old_root, old_aggs = int(self.root[slot]), int(self.agg_sig[slot])
            self._set_shape(slot, rec)
            self._set_traits(slot, rec.trait_ids)
            self._set_aggregates(slot, rec.aggregate_ids)
            self._set_inventories(slot, rec.inventories)
            self.fragments.pop(slot, None)
            new_root = int(self.root[slot])
            if rec.id in fresh or old_root != new_root:
                touched_roots.update((old_root, new_root))
                tree_changed = True
            if old_aggs != self.agg_sig[slot]:
                tree_changed = True
        if touched_roots:
            self._rebuild_members(touched_roots, [self.slot_of_id[r.id] for r in records])
        if tree_changed:
            self._anchor_cache.clear()

    def _new_slot(self, rec: ProviderRecord) -> None:
        slot = self.n
        self.n += 1
        size = self.n
        self.db_id = _grow(self.db_id, size, 0)
        self.parent = _grow(self.parent, size, -1)
        self.root = _grow(self.root, size, 0)
        self.trait_sig = _grow(self.trait_sig, size, 0)
        self.agg_sig = _grow(self.agg_sig, size, 0)
        self.alive = _grow(self.alive, size, False)
        self.uuids.append(rec.uuid)
        self.db_id[slot] = rec.id
        self.root[slot] = slot
        self.alive[slot] = True
        self.slot_of_id[rec.id] = slot
        self.slot_of_uuid[rec.uuid] = slot

    def _set_shape(self, slot: int, rec: ProviderRecord) -> None:
        old_uuid = self.uuids[slot]
        if old_uuid != rec.uuid:
            # A reused database id: the slot now stands for another provider.
            self.slot_of_uuid.pop(old_uuid or "", None)
            self.uuids[slot] = rec.uuid
            self.slot_of_uuid[rec.uuid] = slot
        had_parent = self.parent[slot] >= 0
        parent = -1 if rec.parent_id is None else self.slot_of_id[rec.parent_id]
        self.parent[slot] = parent
        self.root[slot] = self.slot_of_id[rec.root_id]
        self.nested += int(parent >= 0) - int(had_parent)

    def _set_traits(self, slot: int, trait_ids: frozenset[int]) -> None:
        self.trait_sig[slot] = self.traits.intern(frozenset(trait_ids))
        sharing_id = self.names.trait_id.get(SHARING_TRAIT)
        if sharing_id is not None and sharing_id in trait_ids:
            self.sharing.add(slot)
        else:
            self.sharing.discard(slot)

    def _set_aggregates(self, slot: int, agg_ids: frozenset[int]) -> None:
        old = self.agg_set(slot)
        new = frozenset(agg_ids)
        for agg in old - new:
            members = self.agg_members.get(agg)
            if members is not None:
                members.discard(slot)
                if not members:
                    del self.agg_members[agg]
        for agg in new - old:
            self.agg_members.setdefault(agg, set()).add(slot)
        self.agg_sig[slot] = self.aggs.intern(new)

    def _set_inventories(self, slot: int, inventories: tuple[InventoryRecord, ...]) -> None:
        wanted = {inv.rc_id: inv for inv in inventories}
        for rc_id, col in self.rc.items():
            if rc_id not in wanted and slot in col.row_of:
                col.remove(slot)
        for rc_id, inv in wanted.items():
            self.rc.setdefault(rc_id, RcColumn()).set(slot, inv)

    def _remove(self, slot: int) -> None:
        self._set_traits(slot, frozenset())
        self._set_aggregates(slot, frozenset())
        self._set_inventories(slot, ())
        self.nested -= int(self.parent[slot] >= 0)
        self.parent[slot] = -1
        self.alive[slot] = False
        del self.slot_of_id[int(self.db_id[slot])]
        uuid = self.uuids[slot]
        if uuid is not None and self.slot_of_uuid.get(uuid) == slot:
            del self.slot_of_uuid[uuid]
        self.uuids[slot] = None
        self.root[slot] = slot
        self.fragments.pop(slot, None)
        self.dead += 1

    def _rebuild_members(self, roots: set[int], changed: list[int]) -> None:
        """Recompute the member lists of trees that gained or lost providers.

        A provider now in tree r was either already listed under r or is one
        of the providers just changed, so only those need looking at.
        """
        by_root: dict[int, list[int]] = {}
        for slot in changed:
            by_root.setdefault(int(self.root[slot]), []).append(slot)
        for root in roots:
            candidates = set(self.members.pop(root, [root])) | set(by_root.get(root, ()))
            members = sorted(s for s in candidates
                             if self.alive[s] and int(self.root[s]) == root)
            if len(members) > 1:
                self.members[root] = members

    def needs_compaction(self) -> bool:
        return self.dead > 1000 and self.dead * 4 > self.n
