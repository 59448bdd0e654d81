"""GET /allocation_candidates/explain: why providers were left out, counted."""

from __future__ import annotations

import pytest

from tests.candidates_world import World

pytestmark = pytest.mark.all_backends

AGG = "a1a1a1a1-0000-4000-8000-000000000001"


@pytest.fixture
def world(placement_app) -> World:
    w = World(placement_app.engine)
    w.provider("ok", inventory={"VCPU": 8, "MEMORY_MB": 4096}, aggregates=[AGG])
    w.provider("disabled", inventory={"VCPU": 8, "MEMORY_MB": 4096}, aggregates=[AGG],
               traits=["COMPUTE_STATUS_DISABLED"])
    w.provider("full", inventory={"VCPU": 8, "MEMORY_MB": 4096}, aggregates=[AGG])
    w.allocate({"full": {"VCPU": 8}})
    w.provider("elsewhere", inventory={"VCPU": 8, "MEMORY_MB": 4096})
    w.provider("small", inventory={"VCPU": {"total": 8, "max_unit": 1}, "MEMORY_MB": 4096},
               aggregates=[AGG])
    w.provider("diskonly", inventory={"DISK_GB": 100}, aggregates=[AGG])
    return w


QUERY = f"resources=VCPU:2,MEMORY_MB:512&required=!COMPUTE_STATUS_DISABLED&member_of={AGG}"


def explain(client, query: str, version: str = "1.39") -> dict:
    resp = client.get(f"/allocation_candidates/explain?{query}", version=version)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_counts_each_provider_once_by_its_first_reason(client, world):
    body = explain(client, QUERY)
    assert body["allocation_candidates"] == 1
    assert body["providers"] == 6 and body["trees"] == 6
    assert body["groups"][""] == {
        "providers_matching": 1,
        "providers_excluded": {
            "not_in_aggregate": 1,                        # elsewhere
            "forbidden_trait:COMPUTE_STATUS_DISABLED": 1,  # disabled
            "no_inventory:VCPU": 1,                        # diskonly
            "insufficient_capacity:VCPU": 1,               # full
            "above_max_unit:VCPU": 1,                      # small
        },
    }
    assert body["trees_excluded"] == {"group_unsatisfied:resources": 5}


def test_named_providers_get_every_reason(client, world):
    body = explain(client, f"{QUERY}&provider={world['disabled']}&provider={world['ok']}"
                           f"&provider=00000000-0000-4000-8000-000000000000")
    named = body["providers_named"]
    assert named[world["disabled"]]["groups"][""] == ["forbidden_trait:COMPUTE_STATUS_DISABLED"]
    assert named[world["disabled"]]["tree"] == "group_unsatisfied:resources"
    assert named[world["ok"]] == {"found": True, "root_provider_uuid": world["ok"],
                                  "groups": {"": []}, "tree": None}
    assert named["00000000-0000-4000-8000-000000000000"] == {"found": False}


def test_cross_group_reasons(client, world):
    body = explain(client, "resources1=VCPU:1&resources2=MEMORY_MB:512&group_policy=isolate")
    # Hosts with room serve each group alone, but never with two providers.
    assert body["allocation_candidates"] == 0
    assert body["trees_excluded"] == {"group_policy": 4,
                                      "group_unsatisfied:resources1": 2}  # full, diskonly
    body = explain(client, "resources=VCPU:8&resources1=VCPU:1&group_policy=none")
    assert body["trees_excluded"] == {
        "group_unsatisfied:resources": 3,  # full, small (max_unit 1), diskonly
        "combined_capacity": 3,            # 8 + 1 VCPU on hosts of 8
    }


def test_same_query_rules_as_candidates(client, world):
    resp = client.get("/allocation_candidates/explain?resources=VCPU:1&limit=0")
    assert resp.status_code == 400
    resp = client.get("/allocation_candidates/explain?resources=NOPE:1")
    assert resp.status_code == 400
    assert client.get("/allocation_candidates/explain?resources=VCPU:1",
                      version="1.9").status_code == 404
    resp = client.get("/allocation_candidates/explain?resources=VCPU:1",
                      headers={"X-Auth-Token": "someone:project"})
    assert resp.status_code == 403


def test_hosts_excluded_add_up_with_one_reason_each(client, world):
    body = explain(client, f"resources=VCPU:2,MEMORY_MB:512&root_required=!COMPUTE_STATUS_DISABLED"
                           f"&member_of={AGG}")
    # The tree view says "group unsatisfied"; the host view says which check, one per host.
    assert body["hosts_excluded"] == {
        "root_required": 1,                 # disabled
        "not_in_aggregate": 1,              # elsewhere
        "no_inventory:VCPU": 1,             # diskonly
        "insufficient_capacity:VCPU": 1,    # full
        "above_max_unit:VCPU": 1,           # small
    }
    assert sum(body["hosts_excluded"].values()) == body["trees"] - 1   # "ok" fits


def test_forbidden_aggregates_are_named_per_host(client, world):
    body = explain(client, f"resources=VCPU:2&member_of=!{AGG}")
    assert body["hosts_excluded"] == {f"in_forbidden_aggregate:{AGG}": 5}


def test_nearest_is_the_largest_usable_amount_on_an_eligible_provider(client, world):
    body = explain(client, "resources=VCPU:64,MEMORY_MB:512"
                           "&root_required=!COMPUTE_STATUS_DISABLED")
    assert body["hosts_excluded"] == {"root_required": 1, "insufficient_capacity:VCPU": 4,
                                      "no_inventory:VCPU": 1}
    nearest = body["nearest"][""]
    # "disabled" has 8 free but may not be used; "small" has 8 free but max_unit 1.
    assert nearest["VCPU"]["free"] == 8
    assert nearest["VCPU"]["name"] in ("ok", "elsewhere")
    assert nearest["VCPU"]["provider"] == world[nearest["VCPU"]["name"]]
    assert nearest["MEMORY_MB"] == {"free": 4096, "provider": world["ok"], "name": "ok"}
    suffixed = explain(client, "resources1=VCPU:64")
    assert suffixed["hosts_excluded"] == {"resources1:insufficient_capacity:VCPU": 5,
                                          "resources1:no_inventory:VCPU": 1}
    assert suffixed["nearest"]["1"]["VCPU"]["free"] == 8


def test_a_required_trait_no_host_has_is_named_per_host(client, world):
    body = explain(client, "resources=VCPU:1&required=HW_ARCH_S390X")
    assert body["trees_excluded"]["missing_traits:resources"] == 4
    assert body["hosts_excluded"]["missing_trait:HW_ARCH_S390X"] == 4
