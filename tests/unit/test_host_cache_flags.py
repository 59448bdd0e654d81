"""A cell's copy takes the flags read between whole reads (host_cache.with_flags): each
host ends with exactly the flags read, hosts not flagged any more are cleared, and a copy
whose flags did not change is the same dict (its columns are not made again). The
records decide what changed: nothing remembered beside them can go stale."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from stratus.scheduler.host_cache import NodeRecord, flagged, with_flags

UUIDS = [f"node-{i}" for i in range(6)]
flags = st.tuples(st.booleans(), st.sampled_from([None, "maintenance", "old"]),
                  st.booleans()).filter(lambda f: f[0] or f[2])


def record(uuid: str, disabled: bool = False, reason: str | None = None,
           forced_down: bool = False, has_service: bool = True) -> NodeRecord:
    return NodeRecord(uuid, uuid, uuid, 8, 0, 1024, 0, 10, 0, has_service, disabled, reason,
                      forced_down, dt.datetime(2026, 1, 1), 1001, "fake")


@st.composite
def cells(draw):
    nodes = {}
    for uuid in UUIDS:
        f = draw(st.one_of(st.none(), flags))
        has_service = draw(st.booleans()) if f is None else True
        nodes[uuid] = record(uuid, *(f or (False, None, False)), has_service=has_service)
    return nodes


@given(cells(), st.dictionaries(st.sampled_from([*UUIDS, "elsewhere"]), flags))
def test_each_host_ends_with_the_flags_read(nodes, read):
    out = with_flags(nodes, read)
    assert out.keys() == nodes.keys()
    for uuid, rec in out.items():
        if not nodes[uuid].has_service:
            assert rec == nodes[uuid]       # no service: no flags to take
            continue
        assert (rec.disabled, rec.disabled_reason, rec.forced_down) == read.get(
            uuid, (False, None, False))
        assert rec.last_seen_up == nodes[uuid].last_seen_up and rec.host == nodes[uuid].host


@given(cells())
def test_unchanged_flags_keep_the_same_copy(nodes):
    assert with_flags(nodes, flagged(nodes)) is nodes


def test_a_cleared_flag_is_cleared_and_the_others_kept():
    nodes = {"a": record("a", True, "maintenance"), "b": record("b", forced_down=True)}
    out = with_flags(nodes, {"b": (False, None, True)})
    assert out is not nodes
    assert (out["a"].disabled, out["a"].disabled_reason) == (False, None)
    assert out["b"] is nodes["b"]
