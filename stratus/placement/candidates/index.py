"""An in-memory, columnar index of resource providers, kept current incrementally.

Every provider gets a *slot* (a small integer) and every fact about it lives in
numpy columns indexed by slot:

- shape: database id, parent and root slots, ``alive``, ``in_tree`` (belongs to
  a tree of more than one provider);
- traits and aggregates as *signatures*: the id of the provider's (interned)
  trait set and aggregate set. A filter such as "has HW_CPU_X86_AVX2 and not
  COMPUTE_STATUS_DISABLED" is evaluated once per distinct set (a few hundred in
  a large cloud), then gathered over slots in one vector operation;
- inventory: one :class:`RcColumn` per resource class, dense over slots
  (``has``, ``cap = (total - reserved) * allocation_ratio``, ``used`` (the
  inventory's running total), ``free = cap - used``, min_unit, max_unit, step_size).
  "Which providers can take 4 more VCPU" is ``has & (free >= 4) & ...`` over a
  slice of slots, with no gather or scatter.

Memory: about 65 bytes per provider for shape, signatures and the uuid's JSON
text, 37 per provider per resource class present anywhere, plus the uuid and
two dict entries (~250 bytes); measured at 100,000 providers with five classes,
about 650 bytes per provider (plus ~330 for cached rendered summaries).

Slots are appended in load order (database id order after a full load) and
never reused, so slot order is a stable, deterministic order. Removed
providers leave a dead slot; once dead slots are a quarter of the index the
next refresh reloads everything.

The building blocks (records, names, interned sets, class columns) live in
:mod:`.columns`. The index does no I/O: :mod:`.changes` reads the database and calls
:meth:`ProviderIndex.apply` (or :meth:`ProviderIndex.bulk`); unit tests call
them directly.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from stratus.placement.candidates.columns import (
    MAX_AMOUNT,
    SHARING_TRAIT,
    UUID_JSON_WIDTH,
    InventoryRecord,
    Names,
    ProviderRecord,
    RcColumn,
    SetInterner,
    Slots,
    quote,
    resized,
)

__all__ = [
    "MAX_AMOUNT",
    "SHARING_TRAIT",
    "InventoryRecord",
    "Names",
    "ProviderIndex",
    "ProviderRecord",
    "RcColumn",
    "Slots",
    "quote",
]


class ProviderIndex:
    """Providers, their trees, inventories, usage, traits and aggregates."""

    def __init__(self, size: int = 16) -> None:
        self.n = 0
        self.size = size
        self.db_id = np.zeros(size, np.int64)
        self.parent = np.full(size, -1, np.int32)
        self.root = np.zeros(size, np.int32)
        self.trait_sig = np.zeros(size, np.int32)
        self.agg_sig = np.zeros(size, np.int32)
        self.alive = np.zeros(size, bool)
        self.in_tree = np.zeros(size, bool)
        self.uuids: list[str | None] = []
        # Each uuid as JSON text, one fixed-width row per slot (render.py builds
        # many candidates at once from it); uuids of another width are counted
        # and rendered one by one instead.
        self.uuid_json = np.zeros((size, UUID_JSON_WIDTH), np.uint8)
        self.odd_uuids = 0
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
        self.fragments: dict[int, bytes] = {}  # rendered summaries, see render.py

    # ---- reading ------------------------------------------------------------------

    @property
    def has_trees(self) -> bool:
        return self.nested > 0

    def tree(self, root: int) -> list[int]:
        """The slots of the tree rooted at ``root``, in slot order."""
        return self.members.get(root) or [root]

    def trait_set(self, slot: int) -> frozenset[int]:
        return self.traits.sets[self.trait_sig[slot]]

    def agg_set(self, slot: int) -> frozenset[int]:
        return self.aggs.sets[self.agg_sig[slot]]

    def column(self, rc: int) -> RcColumn | None:
        return self.rc.get(rc)

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
        return [rc for rc, col in self.rc.items() if col.has[slot]]

    # ---- writing --------------------------------------------------------------------

    def apply(self, records: Iterable[ProviderRecord], removed_ids: Iterable[int] = ()) -> None:
        """Make the index reflect these providers (upserted) and removals."""
        records = list(records)
        touched_roots: set[int] = set()
        shape_changed = False
        for pid in removed_ids:
            slot = self.slot_of_id.get(pid)
            if slot is not None:
                touched_roots.add(int(self.root[slot]))
                self._remove(slot)
                shape_changed = True
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
                shape_changed = True
            shape_changed = shape_changed or old_aggs != self.agg_sig[slot]
        if touched_roots:
            self._rebuild_members(touched_roots, [self.slot_of_id[r.id] for r in records])
        if shape_changed:
            self._anchor_cache.clear()
        # (A rendered summary depends only on its own provider: parent and root
        # are named by uuid, and a provider that moves is itself among the changed.)

    def _ensure_size(self, size: int) -> None:
        if size <= self.size:
            return
        self.size = max(size, 2 * self.size)
        for name, fill in (("db_id", 0), ("parent", -1), ("root", 0), ("trait_sig", 0),
                           ("agg_sig", 0), ("alive", False), ("in_tree", False)):
            setattr(self, name, resized(getattr(self, name), self.size, fill))
        grown = np.zeros((self.size, UUID_JSON_WIDTH), np.uint8)
        grown[: len(self.uuid_json)] = self.uuid_json
        self.uuid_json = grown
        for col in self.rc.values():
            col.resize(self.size)

    def _new_slot(self, rec: ProviderRecord) -> None:
        slot = self.n
        self._ensure_size(slot + 1)
        self.n += 1
        self.uuids.append(None)
        self._set_uuid(slot, rec.uuid)
        self.db_id[slot] = rec.id
        self.root[slot] = slot
        self.alive[slot] = True
        self.traits.used[0] += 1
        self.aggs.used[0] += 1
        self.slot_of_id[rec.id] = slot
        self.slot_of_uuid[rec.uuid] = slot

    def _set_shape(self, slot: int, rec: ProviderRecord) -> None:
        old_uuid = self.uuids[slot]
        if old_uuid != rec.uuid:
            # A reused database id: the slot now stands for another provider.
            self.slot_of_uuid.pop(old_uuid or "", None)
            self._set_uuid(slot, rec.uuid)
        had_parent = self.parent[slot] >= 0
        parent = -1 if rec.parent_id is None else self.slot_of_id[rec.parent_id]
        self.parent[slot] = parent
        self.root[slot] = self.slot_of_id[rec.root_id]
        self.nested += int(parent >= 0) - int(had_parent)

    def _set_uuid(self, slot: int, uuid: str | None) -> None:
        old = self.uuids[slot]
        if old is not None and len(quote(old)) != UUID_JSON_WIDTH:
            self.odd_uuids -= 1
        self.uuids[slot] = uuid
        if uuid is None:
            return
        self.slot_of_uuid[uuid] = slot
        text = quote(uuid)
        if len(text) == UUID_JSON_WIDTH:
            self.uuid_json[slot] = np.frombuffer(text, np.uint8)
        else:
            self.odd_uuids += 1

    def _set_traits(self, slot: int, trait_ids: frozenset[int]) -> None:
        self.traits.used[self.trait_sig[slot]] -= 1
        sig = self.traits.intern(frozenset(trait_ids))
        self.traits.used[sig] += 1
        self.trait_sig[slot] = sig
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
        self.aggs.used[self.agg_sig[slot]] -= 1
        sig = self.aggs.intern(new)
        self.aggs.used[sig] += 1
        self.agg_sig[slot] = sig

    def _set_inventories(self, slot: int, inventories: tuple[InventoryRecord, ...]) -> None:
        wanted = {inv.rc_id: inv for inv in inventories}
        for rc_id, col in self.rc.items():
            if rc_id not in wanted and col.has[slot]:
                col.remove(slot)
        for rc_id, inv in wanted.items():
            column = self.rc.get(rc_id)
            if column is None:
                column = self.rc[rc_id] = RcColumn(self.size)
            column.set(slot, inv)

    def _remove(self, slot: int) -> None:
        self._set_traits(slot, frozenset())
        self._set_aggregates(slot, frozenset())
        self._set_inventories(slot, ())
        self.traits.used[0] -= 1
        self.aggs.used[0] -= 1
        self.nested -= int(self.parent[slot] >= 0)
        self.parent[slot] = -1
        self.alive[slot] = False
        self.in_tree[slot] = False
        del self.slot_of_id[int(self.db_id[slot])]
        uuid = self.uuids[slot]
        if uuid is not None and self.slot_of_uuid.get(uuid) == slot:
            del self.slot_of_uuid[uuid]
        self._set_uuid(slot, None)
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
        rebuilt = {}
        for root in roots:
            before = self.members.pop(root, [root])
            self.in_tree[before] = False
            candidates = set(before) | set(by_root.get(root, ()))
            rebuilt[root] = sorted(s for s in candidates
                                   if self.alive[s] and int(self.root[s]) == root)
        for root, members in rebuilt.items():
            if len(members) > 1:
                self.members[root] = members
                self.in_tree[members] = True

    def needs_compaction(self) -> bool:
        return self.dead > 1000 and self.dead * 4 > self.n

    @classmethod
    def bulk(cls, names: Names, providers: list[tuple], inventories: list[tuple],
             traits: list[tuple], aggregates: list[tuple]) -> ProviderIndex:
        """An index of every provider from the tables' rows, built column-wise.

        ``providers``: (id, uuid, parent_id, root_id); ``inventories``: (provider
        id, class id, total, reserved, min_unit, max_unit, step_size, ratio,
        used); ``traits`` and ``aggregates``:
        (provider id, trait or aggregate id). The same result as :meth:`apply`
        of every record, many times faster.
        """
        providers = sorted(providers, key=lambda p: p[0])
        n = len(providers)
        index = cls(max(16, n + n // 8))
        index.names = names
        index.n = n
        index.db_id[:n] = [p[0] for p in providers]
        uuids: list[str] = [p[1] for p in providers]
        index.uuids = list(uuids)
        slot = index.slot_of_id = {int(p[0]): i for i, p in enumerate(providers)}
        index.slot_of_uuid = {u: i for i, u in enumerate(uuids)}
        texts = [quote(u) for u in uuids]
        if all(len(t) == UUID_JSON_WIDTH for t in texts):
            if n:
                index.uuid_json[:n] = np.frombuffer(b"".join(texts), np.uint8).reshape(n, -1)
        else:
            for i, u in enumerate(uuids):
                index.uuids[i] = None
                index._set_uuid(i, u)
        index.parent[:n] = [-1 if p[2] is None else slot[p[2]] for p in providers]
        index.root[:n] = [i if p[3] is None else slot[p[3]] for i, p in enumerate(providers)]
        index.alive[:n] = True
        index.nested = int((index.parent[:n] >= 0).sum())
        for rows, interner, sig in ((traits, index.traits, index.trait_sig),
                                    (aggregates, index.aggs, index.agg_sig)):
            sets: dict[int, set[int]] = {}
            for pid, item in rows:
                sets.setdefault(slot[pid], set()).add(int(item))
            for s, items in sets.items():
                sig[s] = interner.intern(frozenset(items))
            interner.used = np.bincount(sig[:n], minlength=len(interner.sets)).tolist()
        for s, aggs in enumerate(index.agg_sig[:n].tolist()):
            for agg in index.aggs.sets[aggs]:
                index.agg_members.setdefault(agg, set()).add(s)
        sharing = names.trait_id.get(SHARING_TRAIT)
        if sharing is not None:
            holds = index.traits.table(lambda t: sharing in t)[index.trait_sig[:n]]
            index.sharing = {int(s) for s in np.flatnonzero(holds)}
        index._bulk_inventories(inventories)
        trees: dict[int, list[int]] = {}
        for s in np.flatnonzero(index.parent[:n] >= 0).tolist():
            trees.setdefault(int(index.root[s]), []).append(s)
        index.members = {r: sorted([r, *kids]) for r, kids in trees.items()}
        for members in index.members.values():
            index.in_tree[members] = True
        return index

    def _bulk_inventories(self, inventories: list[tuple]) -> None:
        slot = self.slot_of_id
        by_rc: dict[int, list[tuple]] = {}
        used_by_rc: dict[int, list[int]] = {}
        for pid, rc, *fields, used in inventories:
            by_rc.setdefault(int(rc), []).append((slot[pid], *fields))
            used_by_rc.setdefault(int(rc), []).append(int(used or 0))
        for rc, rows in by_rc.items():
            col = self.rc[rc] = RcColumn(self.size)
            data = np.array(rows, dtype=np.float64)
            at = data[:, 0].astype(np.int64)
            col.has[at] = True
            col.cap[at] = (data[:, 1] - data[:, 2]) * data[:, 6]
            col.min_unit[at] = np.minimum(data[:, 3], MAX_AMOUNT)
            col.max_unit[at] = np.minimum(data[:, 4], MAX_AMOUNT)
            col.step[at] = np.clip(data[:, 5], 1, MAX_AMOUNT)
            col.used[at] = np.array(used_by_rc[rc], np.int64)   # exact, not via float
            col.count = len(rows)
            col.any_step = bool((data[:, 5] > 1).any())
            # (total - reserved) * ratio in Python floats, exactly as Placement
            # computes it; numpy's float64 arithmetic gives the same result.
        for col in self.rc.values():
            col.free = col.cap - col.used
            col.free[~col.has] = -1.0
