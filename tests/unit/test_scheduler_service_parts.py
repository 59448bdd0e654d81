"""The scheduler service's pure parts: options, spec JSON, grouping and summaries, errors."""

from __future__ import annotations

import json

import pytest

from stratus import config
from stratus.bus import errors as bus_errors
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.placement import candidate_table
from stratus.scheduler import manager
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import (
    Flavor,
    InvalidRequest,
    RequestGroup,
    RequestSpec,
    ServerGroup,
)
from stratus.scheduler.rpcapi import SchedulerRPC


def test_request_spec_survives_json():
    spec = RequestSpec(Flavor("f", 2, 1024, 10, 5, 512, {"trait:X": "required"}), "p", "u",
                       num_instances=3, availability_zone="az1",
                       image_required_traits={"A"}, image_forbidden_traits={"B"},
                       port_groups=[RequestGroup("_p1", {"NET_BW_EGR_KILOBIT_PER_SEC": 10},
                                                 {"CUSTOM_PHYSNET_A"})],
                       server_group=ServerGroup("g", "anti-affinity", frozenset({"h1"}), 2),
                       ignore_hosts={"h2"}, requested_cell="cell2")
    again = RequestSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec


def test_request_spec_ignores_unknown_keys_refuses_newer_major_and_junk():
    data = RequestSpec(Flavor("f", 1, 1, 1), "p", "u").to_dict()
    data["from_the_future"] = 1
    assert RequestSpec.from_dict(data).project_id == "p"
    with pytest.raises(InvalidRequest, match=r"version 2\.0"):
        RequestSpec.from_dict(dict(data, version="2.0"))
    with pytest.raises(InvalidRequest, match="KeyError"):
        RequestSpec.from_dict({"version": "1.0"})


def test_no_valid_host_crosses_the_bus_as_itself():
    exc = NoValidHost("Nothing fits.", {"compute service disabled": 3, "down": 1})
    wire = json.loads(json.dumps(bus_errors.to_wire(exc)))
    again = bus_errors.from_wire(wire, SchedulerRPC.errors, "scheduler", "select_destinations")
    assert isinstance(again, NoValidHost)
    assert (again.reason, again.counts) == (exc.reason, exc.counts)
    assert str(again) == ("No valid host was found. Nothing fits. "
                          "(compute service disabled: 3; down: 1)")


def test_cell_aggregate_is_stable_and_distinct_per_cell():
    a = cell_aggregate_uuid("11111111-1111-1111-1111-111111111111")
    assert a == cell_aggregate_uuid("11111111-1111-1111-1111-111111111111")
    assert a != cell_aggregate_uuid("22222222-2222-2222-2222-222222222222")


def test_options_from_config_and_bad_names():
    cfg = config.load([], environ={}, overrides={
        ("scheduler", "weights"): ["ram:-1.5", "cpu"],
        ("scheduler", "max_placement_results"): 7})
    opts = manager.SchedulerOptions.from_config(cfg)
    assert opts.weights == {"ram": -1.5, "cpu": 1.0}
    assert opts.max_placement_results == 7
    assert opts.request_filters[0].__name__ == "compute_status"
    bad = cfg.with_overrides({("scheduler", "weights"): ["ramm:1"]})
    with pytest.raises(config.ConfigError, match="unknown weigher"):
        manager.SchedulerOptions.from_config(bad)


def test_explain_counts_label_groups_and_hosts():
    body = {"groups": {"": {"providers_excluded": {"insufficient_capacity:VCPU": 4}},
                       "_port": {"providers_excluded": {"missing_trait:CUSTOM_X": 2}}},
            "trees_excluded": {"root_required": 9}}
    assert manager.explain_counts(body) == {
        "placement: insufficient_capacity:VCPU (providers)": 4,
        "placement group _port: missing_trait:CUSTOM_X (providers)": 2,
        "placement: root_required (hosts)": 9}


def test_allocation_requests_group_by_host_even_with_a_sharing_provider():
    summaries = {"cn1": {"root_provider_uuid": "cn1"}, "numa1": {"root_provider_uuid": "cn1"},
                 "cn2": {"root_provider_uuid": "cn2"}, "disk": {"root_provider_uuid": "disk"}}
    ars = [{"allocations": {"numa1": {}, "cn1": {}, "disk": {}}},
           {"allocations": {"cn2": {}, "disk": {}}},
           {"allocations": {"cn1": {}}}]
    grouped = candidate_table.by_root(ars, summaries)
    assert list(grouped) == ["cn1", "cn2"]
    assert grouped["cn1"] == [ars[0], ars[2]]


def test_placement_usage_replaces_the_cells_figures_summed_over_the_tree():
    state = HostState("h", "h", "cn1", vcpus_total=1, memory_mb_total=1)
    summaries = {
        "cn1": {"root_provider_uuid": "cn1",
                "resources": {"DISK_GB": {"capacity": 100, "used": 10}}},
        "numa0": {"root_provider_uuid": "cn1",
                  "resources": {"VCPU": {"capacity": 8, "used": 2},
                                "MEMORY_MB": {"capacity": 4096, "used": 1024}}},
        "numa1": {"root_provider_uuid": "cn1",
                  "resources": {"VCPU": {"capacity": 8, "used": 0}}},
        "other": {"root_provider_uuid": "other",
                  "resources": {"VCPU": {"capacity": 99, "used": 0}}},
    }
    manager._overlay_usage(state, "cn1", summaries)
    assert (state.vcpus_total, state.vcpus_used) == (16, 2)
    assert (state.free_memory_mb, state.free_disk_gb) == (3072, 90)
