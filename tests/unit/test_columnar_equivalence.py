"""The columnar path passes, counts and ranks exactly as the per-host path (hypothesis).

Random fleets (hosts up or down, disabled, old computes, drivers, zones, cells,
Placement's usage for some classes and not others, hosts Placement offered that no cell
knows) and random requests (forced, ignored and requested hosts, zones, server groups of
every policy, image properties, a newer compute needed) and random weigher multipliers.
Both paths start from the same candidate table and cell records; a batch consumes the
chosen host and ranks again. Changing one filter's or weigher's rule in one path only
makes this fail (tried: ``ram_columns`` on used rather than free memory; the anti-affinity
column form without its policy check).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.placement import candidate_table
from stratus.scheduler import columns, filters, host_cache, weighers
from stratus.scheduler.host_cache import NodeRecord
from stratus.scheduler.host_manager import Located, positions
from stratus.scheduler.host_state import HostState
from stratus.scheduler.manager import HostColumnPool, HostList, _apply_usage, count_instances
from stratus.scheduler.pipeline import run_column_filters, run_filters
from stratus.scheduler.request import Flavor, RequestSpec, ServerGroup

NOW = dt.datetime(2026, 1, 1, 12, 0, 0)
SEEN_SINCE = NOW - dt.timedelta(seconds=60)
NAMES = [f"h{i}" for i in range(12)]
CELLS = ["cell-a", "cell-b"]
ZONES = ["nova", "az1", "az2"]


def sometimes(rare: object, usual: object = True) -> st.SearchStrategy:
    """``rare`` one time in five (most hosts are up, enabled and current)."""
    return st.integers(0, 4).map(lambda n: rare if n == 0 else usual)


@st.composite
def hosts(draw: st.DrawFn) -> list[dict]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=len(NAMES),
                          unique=True))
    out = []
    for name in names:
        vcpus, memory, disk = (draw(st.integers(1, 64)), draw(st.integers(512, 65536)),
                               draw(st.integers(10, 2000)))
        placement = {}
        for rc, total in (("VCPU", vcpus), ("MEMORY_MB", memory), ("DISK_GB", disk)):
            if draw(st.booleans()):
                cap = draw(st.integers(0, total * 4))
                placement[rc] = (cap, draw(st.integers(0, max(cap, 1))))
        out.append({
            "record": NodeRecord(
                uuid=f"uuid-{name}", host=name, nodename=name, vcpus=vcpus,
                vcpus_used=draw(st.integers(0, vcpus)), memory_mb=memory,
                memory_mb_used=draw(st.integers(0, memory)), disk_gb=disk,
                disk_gb_used=draw(st.integers(0, disk)), has_service=draw(sometimes(False)),
                disabled=draw(sometimes(True, False)),
                disabled_reason=draw(st.sampled_from([None, "maintenance"])),
                forced_down=draw(sometimes(True, False)),
                last_seen_up=draw(st.sampled_from([NOW, NOW, NOW, None,
                                                   NOW - dt.timedelta(hours=1)])),
                version=draw(st.sampled_from([0, 1003, 1004, 1005, 1005, 1005])),
                hypervisor_type=draw(st.sampled_from(["", "libvirt", "ironic", "fake"]))),
            "cell": draw(st.sampled_from(CELLS)),
            "known": draw(st.integers(0, 9)) > 0,      # one in ten: no cell has it
            "placement": placement,
            "zone": draw(st.sampled_from([None, *ZONES])),
            "requests": draw(st.integers(1, 3)),
            # Servers already there (all projects, and of them the request's project's).
            "counts": draw(st.tuples(st.integers(0, 6), st.integers(0, 6)).map(
                lambda t: (max(t), min(t)))),
        })
    return out


@st.composite
def specs(draw: st.DrawFn) -> RequestSpec:
    some_hosts = st.lists(st.sampled_from(NAMES), max_size=4, unique=True)
    group = None
    if draw(st.booleans()):
        group = ServerGroup(uuid="g", policy=draw(st.sampled_from(
            ["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"])),
            hosts=frozenset(draw(some_hosts)))
    image = draw(st.sampled_from([{}, {"img_hv_type": "qemu"}, {"img_hv_type": "baremetal"},
                                  {"hw_vm_mode": "hvm"}, {"hw_vm_mode": "xen"}]))
    return RequestSpec(
        flavor=Flavor("f", draw(st.integers(1, 8)), draw(st.integers(64, 4096)),
                      draw(st.integers(1, 50))),
        project_id="p", user_id="u",
        ignore_hosts=set(draw(some_hosts)) if draw(st.booleans()) else set(),
        force_hosts=set(draw(some_hosts)) if draw(st.integers(0, 3)) == 0 else set(),
        requested_host=draw(st.sampled_from([None, None, None, "h1", "h5"])),
        availability_zone=draw(st.sampled_from([None, None, *ZONES])),
        server_group=group,
        needs_compute=draw(st.sampled_from([None, None, "1.4", "1.5"])),
        image_properties=image)


multipliers = st.dictionaries(
    st.sampled_from(list(weighers.REGISTRY)),
    st.sampled_from([0.0, 1.0, -1.0, 2.5, -0.3, 10.0]), min_size=1)


def _inputs(fleet: list[dict]) -> tuple[candidate_table.CandidateTable, Located, dict]:
    requests, summaries = [], {}
    for h in fleet:
        rec = h["record"]
        for i in range(h["requests"]):
            requests.append({"allocations": {rec.uuid: {"resources": {"VCPU": 1}}},
                             "mappings": {"": [rec.uuid]}, "n": i})
        summaries[rec.uuid] = {"root_provider_uuid": rec.uuid, "resources": {
            rc: {"capacity": cap, "used": used} for rc, (cap, used) in h["placement"].items()}}
    table = candidate_table.from_body(requests, summaries)
    cells = [(cell, host_cache.copy_columns({
        h["record"].uuid: h["record"] for h in fleet if h["cell"] == cell and h["known"]}))
        for cell in CELLS]
    cell_of, pos = positions(table.roots, cells)
    located = Located(table.roots, cells, cell_of, pos, {}, CELLS, SEEN_SINCE)
    zones = {h["record"].host: h["zone"] for h in fleet if h["zone"] is not None}
    return table, located, zones


def _per_host(table: candidate_table.CandidateTable, located: Located, zones: dict,
              summaries_usage: dict) -> list[HostState]:
    """What ``feasible_hosts`` makes of the same inputs."""
    out = []
    for row, hit in enumerate(located.records):
        if hit is None:
            continue
        state = hit[1].state(hit[0], located.seen_since)
        state.availability_zone = zones.get(state.host) or "nova"
        state.allocation_requests = table.requests_of(row)
        _apply_usage(state, summaries_usage.get(state.uuid, {}))
        out.append(state)
    return out


def _counts_of(fleet: list[dict]) -> dict:
    return {(h["cell"], h["record"].host): h["counts"] for h in fleet}


def _usage_of(fleet: list[dict]) -> dict:
    return {h["record"].uuid: {rc: list(v) for rc, v in h["placement"].items()}
            for h in fleet if h["placement"]}


def _fields(state: HostState) -> tuple:
    return (state.host, state.nodename, state.uuid, state.cell, state.availability_zone,
            state.service_up, state.service_disabled, state.disabled_reason,
            state.service_version, state.hypervisor_type, state.vcpus_total,
            state.vcpus_used, state.memory_mb_total, state.memory_mb_used,
            state.disk_gb_total, state.disk_gb_used, state.instances,
            state.num_instances, state.project_instances, state.allocation_requests)


@settings(max_examples=300, deadline=None)
@given(fleet=hosts(), spec=specs(), weights=multipliers, batch=st.integers(1, 4))
def test_both_paths_pass_count_and_rank_the_same_hosts(fleet, spec, weights, batch):
    table, located, zones = _inputs(fleet)
    plain_hosts = _per_host(table, located, zones, _usage_of(fleet))
    cols = columns.build(table, located, zones, "nova")
    enabled = filters.resolve(filters.DEFAULT_ORDER)

    passed, report = run_filters(plain_hosts, spec, enabled)
    mask, column_report = run_column_filters(cols, spec, enabled)
    assert [cols.uuid[i] for i in np.flatnonzero(mask)] == [h.uuid for h in passed]
    assert column_report.rejected == report.rejected
    assert Counter(column_report.rejected).total() + len(passed) == len(plain_hosts)
    count_instances(passed, _counts_of(fleet))
    cols.count_instances(_counts_of(fleet))

    plain = HostList(passed, spec, weights)
    fast = HostColumnPool(cols, np.flatnonzero(mask), spec, weights)
    refused: set[str] = set()
    for n in range(batch):
        expected = list(plain.ranked(refused))
        got = list(fast.ranked(refused))
        assert [_fields(h) for h in got] == [_fields(h) for h in expected]
        if not expected:
            break
        # The batch's next server goes to the best host; a host that refused is skipped.
        plain.consume(expected[0], f"vm{n}")
        fast.consume(got[0], f"vm{n}")
        if len(expected) > 1 and n % 2:
            refused.add(expected[1].uuid)
    assert sorted(h.uuid for h in fast.refused(refused)) == \
        sorted(h.uuid for h in plain.refused(refused))


@settings(max_examples=100, deadline=None)
@given(fleet=hosts(), spec=specs(), weights=multipliers)
def test_the_weights_themselves_are_equal_to_the_last_bit(fleet, spec, weights):
    """Not only the order: each host's total weight (ties and near-ties rank alike)."""
    table, located, zones = _inputs(fleet)
    plain_hosts = _per_host(table, located, zones, _usage_of(fleet))
    cols = columns.build(table, located, zones, "nova")
    count_instances(plain_hosts, _counts_of(fleet))
    cols.count_instances(_counts_of(fleet))
    expected = {w.host.uuid: w.weight for w in weighers.weigh(plain_hosts, spec, weights)}
    everyone = np.arange(len(cols))
    for name, multiplier in weights.items():
        if multiplier == 0:
            continue
        scalar = [weighers.REGISTRY[name](h, spec) for h in plain_hosts]
        vector = weighers.COLUMN_FORMS[name](cols, spec)[everyone].tolist()
        assert vector == scalar, name
    ranked = weighers.weigh_columns(cols, everyone, spec, weights)
    assert [cols.uuid[i] for i in ranked] == list(expected)
