"""The provider index: incremental updates end where a full load would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.placement.candidates.index import (
    SHARING_TRAIT,
    InventoryRecord,
    Names,
    ProviderIndex,
    ProviderRecord,
)


def names() -> Names:
    out = Names()
    out.set_classes([(1, "VCPU"), (2, "DISK_GB")])
    out.set_traits([(1, "A"), (2, SHARING_TRAIT)])
    out.add_aggregates([(1, "agg-1"), (2, "agg-2")])
    return out


def record(pid: int, parent: int | None = None, root: int | None = None, vcpu: int = 0,
           used: int = 0, traits: frozenset[int] = frozenset(),
           aggs: frozenset[int] = frozenset(), uuid: str | None = None) -> ProviderRecord:
    inventories = (InventoryRecord(1, vcpu, 0, 1, vcpu, 1, 2.0, used),) if vcpu else ()
    return ProviderRecord(pid, uuid or f"rp-{pid}", parent, root or pid, inventories,
                          traits, aggs)


def summary(index: ProviderIndex) -> dict[str, tuple]:
    """Everything observable about each live provider, by uuid."""
    out = {}
    for s in range(index.n):
        if not index.alive[s]:
            continue
        col = index.rc.get(1)
        has = bool(col is not None and col.has[s])
        out[index.uuids[s]] = (
            index.uuids[index.parent[s]] if index.parent[s] >= 0 else None,
            index.uuids[index.root[s]],
            frozenset(index.uuids[m] for m in index.tree(int(index.root[s]))),
            bool(index.in_tree[s]),
            frozenset(index.trait_set(s)), frozenset(index.agg_set(s)),
            (float(col.cap[s]), int(col.used[s]), float(col.free[s])) if has else None,
            s in index.sharing,
            frozenset(index.uuids[a] for a in index.anchors(s)),
        )
    return out


def bulk_of(records: list[ProviderRecord]) -> ProviderIndex:
    return ProviderIndex.bulk(
        names(),
        [(r.id, r.uuid, r.parent_id, r.root_id) for r in records],
        [(r.id, i.rc_id, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size,
          i.allocation_ratio, i.used) for r in records for i in r.inventories],
        [(r.id, t) for r in records for t in r.trait_ids],
        [(r.id, a) for r in records for a in r.aggregate_ids],
    )


@st.composite
def histories(draw: st.DrawFn) -> list[list[ProviderRecord]]:
    """Successive states of a small world: providers come, change and move."""
    states = []
    for _ in range(draw(st.integers(1, 4))):
        records: list[ProviderRecord] = []
        for pid in sorted(draw(st.sets(st.integers(1, 8), min_size=1, max_size=6))):
            parent = draw(st.sampled_from([None, *[r.id for r in records]]))
            root = next(r.root_id for r in records if r.id == parent) if parent else pid
            records.append(record(pid, parent, root, vcpu=draw(st.integers(0, 4)),
                                  used=draw(st.integers(0, 2)),
                                  traits=draw(st.frozensets(st.sampled_from([1, 2]))),
                                  aggs=draw(st.frozensets(st.sampled_from([1, 2])))))
        states.append(records)
    return states


@settings(max_examples=200, deadline=None)
@given(histories())
def test_incremental_updates_match_a_full_load(states: list[list[ProviderRecord]]) -> None:
    index = ProviderIndex()
    index.names = names()
    previous: set[int] = set()
    for records in states:
        ids = {r.id for r in records}
        index.apply(records, removed_ids=previous - ids)
        previous = ids
        assert summary(index) == summary(bulk_of(records))
        assert index.has_trees == any(r.parent_id for r in records)


def test_usage_change_updates_free_capacity() -> None:
    index = ProviderIndex()
    index.names = names()
    index.apply([record(1, vcpu=4)])  # capacity 8 (ratio 2.0), max_unit 4
    assert index.rc[1].fits(4, slice(0, 1)).tolist() == [True]
    index.apply([record(1, vcpu=4, used=5)])
    assert index.rc[1].fits(4, slice(0, 1)).tolist() == [False]
    assert index.rc[1].fits(3, slice(0, 1)).tolist() == [True]


def test_removed_provider_is_gone_and_its_slot_dead() -> None:
    index = ProviderIndex()
    index.names = names()
    index.apply([record(1, vcpu=4), record(2, vcpu=4)])
    index.apply([], removed_ids=[1])
    assert "rp-1" not in index.slot_of_uuid
    assert index.alive[:2].tolist() == [False, True]
    assert index.rc[1].has[:2].tolist() == [False, True]


def test_grows_past_its_initial_size() -> None:
    index = ProviderIndex()
    index.names = names()
    index.apply([record(i, vcpu=2) for i in range(1, 100)])
    assert index.n == 99 and index.rc[1].fits(2, slice(0, 99)).all()


def test_uuid_rows_hold_json_text_and_odd_uuids_are_counted() -> None:
    index = ProviderIndex()
    index.names = names()
    uuid = "2b8b3b34-9b57-4a0b-8c6b-5d1d3e7b8a11"
    index.apply([record(1, uuid=uuid), record(2, uuid="short")])
    assert index.uuid_json[0].tobytes() == f'"{uuid}"'.encode()
    assert index.odd_uuids == 1
    index.apply([], removed_ids=[2])
    assert index.odd_uuids == 0
