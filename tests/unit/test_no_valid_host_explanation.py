"""The NoValidHost message builder: a pure function from Placement's explain answer and
the scheduler's counted rejections to one line for people, details and a category."""

from __future__ import annotations

import json

from stratus.bus import errors as bus_errors
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.explanation import Category, Evidence, Meaning, explain, plain
from stratus.scheduler.rpcapi import SchedulerRPC

FLAVOR = {"": {"VCPU": 32, "MEMORY_MB": 2048, "DISK_GB": 20}}
CELL2_AGG = "c2c2c2c2-0000-4000-8000-000000000002"


def placement(hosts_excluded: dict[str, int], trees: int, **nearest: dict) -> dict:
    return {"trees": trees, "hosts_excluded": hosts_excluded,
            "nearest": {"": nearest} if nearest else {}}


def test_capacity_and_a_disabled_host_with_the_nearest_miss():
    said = explain(Evidence(
        servers=1, asked=FLAVOR,
        explain=placement({"insufficient_capacity:VCPU": 4, "root_required": 1}, 5,
                          VCPU={"free": 16, "provider": "u3", "name": "compute0003"}),
        disabled={"compute0005": "maintenance"}))
    assert said.message == (
        "No valid host was found for 1 server: needs VCPU 32, MEMORY_MB 2048, DISK_GB 20; "
        "5 hosts considered: 1 disabled (compute0005: maintenance), "
        "4 lack VCPU (largest free on an eligible host: 16 on compute0003).")
    assert said.category is Category.CAPACITY
    assert said.details["hosts_considered"] == 5
    assert said.details["excluded"] == [
        {"reason": "root_required", "hosts": 1, "category": "disabled",
         "text": "disabled (compute0005: maintenance)"},
        {"reason": "insufficient_capacity:VCPU", "hosts": 4, "category": "capacity",
         "text": "lack VCPU (largest free on an eligible host: 16 on compute0003)"}]
    assert said.details["message"] == said.message
    json.dumps(said.details)   # travels over the bus and into the API as it is


def test_nearest_miss_absent_or_not_a_miss():
    none = explain(Evidence(1, FLAVOR, explain=placement({"insufficient_capacity:VCPU": 2}, 2)))
    assert "2 lack VCPU (no eligible host has any)" in none.message
    # The roomiest host has enough VCPU: it was short of something else, so no near miss.
    roomy = explain(Evidence(1, FLAVOR, explain=placement(
        {"insufficient_capacity:DISK_GB": 1}, 1,
        DISK_GB={"free": 500, "provider": "u1", "name": "h1"})))
    assert roomy.message.endswith("1 host considered: 1 lacks DISK_GB.")


def test_disabled_cells_zones_projects_and_traits_in_order():
    said = explain(Evidence(
        servers=2, asked={"": {"VCPU": 1}},
        explain=placement({f"in_forbidden_aggregate:{CELL2_AGG}": 3,
                           "in_forbidden_aggregate:other": 1,
                           "in_forbidden_aggregate:unknown": 1,
                           "not_in_aggregate": 2, "missing_trait:HW_GPU,HW_TPU": 1,
                           "root_required": 2}, 10),
        forbidden={CELL2_AGG: Meaning("in disabled cell cell2", Category.DISABLED),
                   "other": Meaning("in aggregates reserved for other projects")},
        outside="outside availability zone az1"))
    assert said.message == (
        "No valid host was found for 2 servers: needs VCPU 1 each; 10 hosts considered: "
        "2 disabled, 3 in disabled cell cell2, 1 in aggregates reserved for other projects, "
        "1 in an aggregate the request excludes, 2 outside availability zone az1, "
        "1 lacks trait HW_GPU or HW_TPU.")
    assert said.category is Category.DISABLED


def test_a_port_group_and_max_unit():
    said = explain(Evidence(
        servers=1, asked={"": {"VCPU": 8}, "_p1": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}},
        group_names={"_p1": "port p1"},
        explain={"trees": 3, "hosts_excluded": {
            "resources_p1:insufficient_capacity:NET_BW_EGR_KILOBIT_PER_SEC": 2,
            "above_max_unit:VCPU": 1},
            "nearest": {"": {"VCPU": {"free": 4, "provider": "u"}},
                        "_p1": {"NET_BW_EGR_KILOBIT_PER_SEC": {"free": 500, "provider": "n",
                                                               "name": "h1:eth0"}}}}))
    assert said.message == (
        "No valid host was found for 1 server: needs VCPU 8; port p1 needs "
        "NET_BW_EGR_KILOBIT_PER_SEC 1000; 3 hosts considered: "
        "2 lack NET_BW_EGR_KILOBIT_PER_SEC for port p1 (largest free on an eligible host: "
        "500 on h1:eth0), 1 allows less than 8 VCPU per server (max_unit) (largest free on "
        "an eligible host: 4 on u).")


def test_host_filters_after_placement_and_many_disabled_hosts_by_reason():
    said = explain(Evidence(
        servers=1, asked={"": {"VCPU": 1}},
        explain=placement({"root_required": 5}, 8), offered=3,
        filtered={"compute service down": 2, "compute service disabled": 1},
        disabled={"a": "maintenance", "b": "maintenance", "c": "maintenance", "d": None,
                  "e": "maintenance"},
        filter_disabled={"old1": "upgrade"}))
    assert said.message == (
        "No valid host was found for 1 server: needs VCPU 1; 8 hosts considered: "
        "5 disabled (maintenance: 4 hosts; no reason given: 1 host), "
        "2 compute service down, 1 compute service disabled (old1: upgrade).")
    assert said.category is Category.DISABLED


def test_a_batch_that_filled_the_hosts_itself_or_lost_them_to_others():
    said = explain(Evidence(servers=4, asked={"": {"VCPU": 8}}, offered=2, placed=3,
                            batch_hosts=2))
    assert said.message == (
        "No valid host was found for 4 servers: needs VCPU 8 each; server 4 of 4 did not "
        "fit: the 3 servers before it in this request took the last room; 2 hosts had room "
        "at first: 2 filled by this request's earlier servers.")
    assert said.category is Category.BATCH
    assert said.details["batch"] == {"placed": 3, "of": 4, "filled_by_request": 2,
                                     "taken_by_others": 0}
    raced = explain(Evidence(servers=1, asked={"": {"VCPU": 8}}, offered=1, conflicts=1))
    assert "server 1 of 1 did not fit: other requests took the last room meanwhile" \
        in raced.message
    assert raced.category is Category.CONFLICT


def test_no_hosts_unknown_and_plain():
    nothing = explain(Evidence(1, {"": {"VCPU": 1}}, explain=placement({}, 0)))
    assert nothing.message.endswith("0 hosts considered.")
    assert nothing.category is Category.NO_HOSTS
    blind = explain(Evidence(1, {"": {"VCPU": 1}},
                             explain_error="Placement cannot explain why: 404 from x"))
    assert blind.message.endswith("; Placement cannot explain why: 404 from x.")
    assert blind.category is Category.UNKNOWN
    said = plain("Placement refused the request: No such resource class CUSTOM_X.",
                 Category.INVALID, 1, {"": {"CUSTOM_X": 1}})
    assert said.message == ("No valid host was found for 1 server: needs CUSTOM_X 1; "
                            "Placement refused the request: No such resource class "
                            "CUSTOM_X.")


def test_an_older_placement_without_hosts_excluded_still_reads():
    said = explain(Evidence(1, {"": {"VCPU": 1}}, explain={
        "trees": 2, "trees_excluded": {"root_required": 1,
                                       "group_unsatisfied:resources": 1}}))
    assert said.message.endswith("2 hosts considered: 1 disabled, 1 cannot serve resources.")


def test_no_valid_host_carries_its_words_over_the_bus():
    said = explain(Evidence(1, FLAVOR, explain=placement({"root_required": 1}, 1)))
    exc = NoValidHost("Placement has no allocation candidates.", {"x": 1}, said.details)
    wire = json.loads(json.dumps(bus_errors.to_wire(exc)))
    again = bus_errors.from_wire(wire, SchedulerRPC.errors, "scheduler", "select_destinations")
    assert isinstance(again, NoValidHost)
    assert str(again) == said.message and again.category == "disabled"
    assert again.counts == {"x": 1}
    # Without details it is the two-argument error older peers know.
    assert len(NoValidHost("r", {"x": 1}).args) == 2
    assert NoValidHost("r").category == "unknown"
