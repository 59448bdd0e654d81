"""GET /allocation_candidates through HTTP: every parameter, every microversion boundary.

The worlds are those of Placement's own functional tests (shared storage with
NUMA trees; the granular hosts), so the expected answers are Placement's.
Candidates are compared as sets of ``{(provider name, class, amount)}``.
"""

from __future__ import annotations

import uuid as uuidlib

import httpx
import pytest

from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from tests.candidates_world import World
from tests.conftest import PlacementClient, make_config

pytestmark = pytest.mark.all_backends

AGG = "a1a1a1a1-0000-4000-8000-000000000001"
AGG_A = "aaaaaaaa-0000-4000-8000-00000000000a"
AGG_B = "bbbbbbbb-0000-4000-8000-00000000000b"
AGG_C = "cccccccc-0000-4000-8000-00000000000c"


def shared_world(world: World) -> World:
    """Two compute nodes with NUMA/PF children, two sharing storage providers."""
    cn = {"VCPU": {"total": 24, "allocation_ratio": 16.0},
          "MEMORY_MB": {"total": 131072, "allocation_ratio": 1.5}}
    world.provider("cn1", inventory=cn, traits=["HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"],
                   aggregates=[AGG])
    world.provider("cn2", inventory={**cn, "DISK_GB": {"total": 2000, "reserved": 100}},
                   aggregates=[AGG])
    for ss in ("ss", "ss2"):
        world.provider(ss, inventory={"DISK_GB": {"total": 2000, "reserved": 100}},
                       traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=[AGG])
    for i in (1, 2):
        for j in (1, 2):
            world.provider(f"numa{i}_{j}", parent=f"cn{i}")
            world.provider(f"pf{i}_{j}", parent=f"numa{i}_{j}",
                           inventory={"SRIOV_NET_VF": 8})
    return world


def granular_world(world: World) -> World:
    world.provider("cn_left", aggregates=[AGG_A], inventory={
        "VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 500, "VGPU": 8, "SRIOV_NET_VF": 8,
        "CUSTOM_NET_MBPS": 4000}, traits=["HW_CPU_X86_AVX", "HW_CPU_X86_AVX2",
                                          "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC", "CUSTOM_FOO"])
    world.provider("cn_middle", aggregates=[AGG_A, AGG_B], inventory={
        "VCPU": 8, "MEMORY_MB": 4096, "SRIOV_NET_VF": 8, "CUSTOM_NET_MBPS": 4000},
        traits=["HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS"])
    world.provider("cn_right", aggregates=[AGG_B, AGG_C], inventory={
        "VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 500, "VGPU": {"total": 8, "max_unit": 2}},
        traits=["HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD"])
    world.provider("shr_disk_1", aggregates=[AGG_A], inventory={"DISK_GB": 1000},
                   traits=["MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD"])
    world.provider("shr_disk_2", aggregates=[AGG_A, AGG_B], inventory={"DISK_GB": 1000},
                   traits=["MISC_SHARES_VIA_AGGREGATE"])
    world.provider("shr_net", aggregates=[AGG_C], inventory={
        "SRIOV_NET_VF": 16, "CUSTOM_NET_MBPS": 40000}, traits=["MISC_SHARES_VIA_AGGREGATE"])
    return world


def numa_world(world: World) -> World:
    """A host with two NUMA nodes (one with an FPGA) and a NIC with two ports."""
    world.provider("cn", traits=["COMPUTE_VOLUME_MULTI_ATTACH"])
    world.provider("numa0", parent="cn", inventory={"VCPU": 4, "MEMORY_MB": 2048},
                   traits=["HW_NUMA_ROOT"])
    world.provider("numa1", parent="cn", inventory={"VCPU": 4, "MEMORY_MB": 2048},
                   traits=["HW_NUMA_ROOT", "CUSTOM_FOO"])
    world.provider("fpga1", parent="numa1", inventory={"FPGA": 1})
    world.provider("nic", parent="cn", traits=["CUSTOM_HW_NIC_ROOT"])
    world.provider("port1", parent="nic", inventory={"CUSTOM_VF": 4},
                   traits=["CUSTOM_PHYSNET1"])
    world.provider("port2", parent="nic", inventory={"CUSTOM_VF": 4},
                   traits=["CUSTOM_PHYSNET2"])
    return world


@pytest.fixture
def world(placement_app) -> World:
    return World(placement_app.engine)


def get(client, query: str, version: str = "1.39"):
    resp = client.get(f"/allocation_candidates?{query}", version=version)
    assert resp.status_code == 200, resp.text
    return resp.json()


def answer(client, world: World, query: str, version: str = "1.39") -> set[frozenset]:
    """The candidates as sets of (provider name, class, amount)."""
    names = {u: n for n, u in world.names.items()}
    out = set()
    for ar in get(client, query, version)["allocation_requests"]:
        allocs = ar["allocations"]
        if isinstance(allocs, list):
            allocs = {a["resource_provider"]["uuid"]: a for a in allocs}
        out.add(frozenset((names[u], rc, n) for u, a in allocs.items()
                          for rc, n in a["resources"].items()))
    return out


def c(*parts: str) -> frozenset:
    """A candidate written as 'name:CLASS:amount' strings."""
    return frozenset((p.split(":")[0], p.split(":")[1], int(p.split(":")[2])) for p in parts)


def names_of(world: World, uuids) -> set[str]:
    by = {u: n for n, u in world.names.items()}
    return {by[u] for u in uuids}


# ---- shared storage and nested trees --------------------------------------------------


def test_not_found_before_1_10(client, world):
    assert client.get("/allocation_candidates?resources=VCPU:1", version="1.9").status_code \
        == 404


def test_sharing_providers_and_list_shape_before_1_12(client, world):
    shared_world(world)
    resp = client.get("/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100",
                      version="1.10")
    assert "cache-control" not in resp.headers and "last-modified" not in resp.headers
    body = resp.json()
    assert isinstance(body["allocation_requests"][0]["allocations"], list)
    assert answer(client, world, "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100", "1.10") == {
        c("cn1:VCPU:1", "cn1:MEMORY_MB:1024", "ss:DISK_GB:100"),
        c("cn1:VCPU:1", "cn1:MEMORY_MB:1024", "ss2:DISK_GB:100"),
        c("cn2:VCPU:1", "cn2:MEMORY_MB:1024", "cn2:DISK_GB:100"),
        c("cn2:VCPU:1", "cn2:MEMORY_MB:1024", "ss:DISK_GB:100"),
        c("cn2:VCPU:1", "cn2:MEMORY_MB:1024", "ss2:DISK_GB:100"),
    }
    summaries = body["provider_summaries"]
    assert names_of(world, summaries) == {"cn1", "cn2", "ss", "ss2"}
    assert summaries[world["cn1"]] == {"resources": {
        "VCPU": {"capacity": 384, "used": 0}, "MEMORY_MB": {"capacity": 196608, "used": 0}}}
    assert summaries[world["ss"]]["resources"] == {"DISK_GB": {"capacity": 1900, "used": 0}}


def test_dict_shape_from_1_12_and_cache_headers_from_1_15(client, world):
    shared_world(world)
    body = get(client, "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100", "1.12")
    assert all(isinstance(ar["allocations"], dict) and "mappings" not in ar
               for ar in body["allocation_requests"])
    resp = client.get("/allocation_candidates?resources=VCPU:1", version="1.15")
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["last-modified"].endswith(" GMT")


def test_limit_from_1_16(client, world):
    shared_world(world)
    body = get(client, "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&limit=1", "1.16")
    assert len(body["allocation_requests"]) == 1
    used = set(body["allocation_requests"][0]["allocations"])
    # Summaries cover only the trees the returned candidates use.
    assert set(body["provider_summaries"]) == used
    # The first limit given counts.
    assert len(get(client, "resources=VCPU:1&limit=10&limit=1", "1.16")
               ["allocation_requests"]) == 2
    resp = client.get("/allocation_candidates?resources=VCPU:1&limit=1", version="1.15")
    assert resp.status_code == 400 and "'limit' was unexpected" in resp.text


def test_required_traits_from_1_17(client, world):
    shared_world(world)
    query = "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&required=HW_CPU_X86_SSE"
    assert answer(client, world, query, "1.17") == {
        c("cn1:VCPU:1", "cn1:MEMORY_MB:1024", "ss:DISK_GB:100"),
        c("cn1:VCPU:1", "cn1:MEMORY_MB:1024", "ss2:DISK_GB:100"),
    }
    summary = get(client, query, "1.17")["provider_summaries"][world["cn1"]]
    assert sorted(summary["traits"]) == ["HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"]
    assert "traits" not in get(client, "resources=VCPU:1", "1.16")["provider_summaries"][
        world["cn1"]]
    resp = client.get("/allocation_candidates?resources=VCPU:1&required=NO_SUCH_TRAIT",
                      version="1.17")
    assert resp.status_code == 400 and "No such trait(s): NO_SUCH_TRAIT." in resp.text


def test_forbidden_traits_from_1_22(client, world):
    shared_world(world)
    query = "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&required=!HW_CPU_X86_SSE"
    assert answer(client, world, query, "1.22") == {
        c("cn2:VCPU:1", "cn2:MEMORY_MB:1024", "cn2:DISK_GB:100"),
        c("cn2:VCPU:1", "cn2:MEMORY_MB:1024", "ss:DISK_GB:100"),
        c("cn2:VCPU:1", "cn2:MEMORY_MB:1024", "ss2:DISK_GB:100"),
    }
    assert client.get(f"/allocation_candidates?{query}", version="1.21").status_code == 400


def test_summaries_list_every_class_from_1_27(client, world):
    shared_world(world)
    old = get(client, "resources=VCPU:1", "1.26")["provider_summaries"][world["cn2"]]
    new = get(client, "resources=VCPU:1", "1.27")["provider_summaries"][world["cn2"]]
    assert set(old["resources"]) == {"VCPU"}
    assert set(new["resources"]) == {"VCPU", "MEMORY_MB", "DISK_GB"}


def test_nested_trees_from_1_29(client, world):
    shared_world(world)
    query = "resources=VCPU:1,SRIOV_NET_VF:4"
    assert answer(client, world, query, "1.28") == set()
    assert answer(client, world, query, "1.29") == {
        c("cn1:VCPU:1", "pf1_1:SRIOV_NET_VF:4"), c("cn1:VCPU:1", "pf1_2:SRIOV_NET_VF:4"),
        c("cn2:VCPU:1", "pf2_1:SRIOV_NET_VF:4"), c("cn2:VCPU:1", "pf2_2:SRIOV_NET_VF:4"),
    }
    summaries = get(client, query, "1.29")["provider_summaries"]
    assert len(summaries) == 10  # both whole trees
    assert summaries[world["pf1_1"]]["parent_provider_uuid"] == world["numa1_1"]
    assert summaries[world["pf1_1"]]["root_provider_uuid"] == world["cn1"]
    assert summaries[world["cn1"]]["parent_provider_uuid"] is None
    # Before 1.29 nested providers may still serve alone; summaries list only them.
    old = get(client, "resources=SRIOV_NET_VF:4", "1.28")
    assert len(old["allocation_requests"]) == 4
    assert names_of(world, old["provider_summaries"]) == {"pf1_1", "pf1_2", "pf2_1", "pf2_2"}
    assert "root_provider_uuid" not in old["provider_summaries"][world["pf1_1"]]
    # Summaries cover whole trees of the limited candidates only.
    limited = get(client, f"{query}&limit=1", "1.29")
    assert len(limited["provider_summaries"]) == 5


def test_in_tree_from_1_31(client, world):
    shared_world(world)
    assert answer(client, world, f"resources=VCPU:1,SRIOV_NET_VF:4&in_tree={world['pf1_2']}",
                  "1.31") == {c("cn1:VCPU:1", "pf1_1:SRIOV_NET_VF:4"),
                              c("cn1:VCPU:1", "pf1_2:SRIOV_NET_VF:4")}
    # in_tree rules out sharing providers outside the tree.
    assert answer(client, world, f"resources=VCPU:1,DISK_GB:10&in_tree={world['cn1']}",
                  "1.31") == set()
    # A suffixed group pinned to a sharing provider, the rest anywhere.
    assert answer(client, world,
                  f"resources=VCPU:1&resources1=DISK_GB:10&in_tree1={world['ss']}",
                  "1.31") == {c("cn1:VCPU:1", "ss:DISK_GB:10"), c("cn2:VCPU:1", "ss:DISK_GB:10")}
    # An unknown provider matches nothing; a malformed one is refused.
    assert answer(client, world, f"resources=VCPU:1&in_tree={uuidlib.uuid4()}", "1.31") == set()
    resp = client.get("/allocation_candidates?resources=VCPU:1&in_tree=life-is-beautiful",
                      version="1.31")
    assert resp.status_code == 400 and "format of uuid" in resp.text
    assert client.get(f"/allocation_candidates?resources=VCPU:1&in_tree={world['cn1']}",
                      version="1.30").status_code == 400


def test_mappings_from_1_34(client, world):
    shared_world(world)
    query = "resources=VCPU:1&resources_DISK=DISK_GB:10&group_policy=none"
    assert all("mappings" not in ar for ar in get(client, query, "1.33")["allocation_requests"])
    for ar in get(client, query, "1.34")["allocation_requests"]:
        mappings = ar["mappings"]
        assert set(mappings) == {"", "_DISK"}
        assert set(ar["allocations"]) == set(mappings[""]) | set(mappings["_DISK"])


# ---- granular request groups ----------------------------------------------------------


def test_group_policy_none_and_isolate(client, world):
    granular_world(world)
    both = "resources1=VCPU:1&resources2=MEMORY_MB:1024"
    assert answer(client, world, f"{both}&group_policy=none", "1.25") == {
        c(f"{cn}:VCPU:1", f"{cn}:MEMORY_MB:1024") for cn in ("cn_left", "cn_middle", "cn_right")}
    assert answer(client, world, f"{both}&group_policy=isolate", "1.25") == set()
    # The first group_policy given counts.
    assert answer(client, world, f"{both}&group_policy=isolate&group_policy=none",
                  "1.25") == set()
    resp = client.get(f"/allocation_candidates?{both}", version="1.25")
    assert resp.status_code == 400
    assert 'The "group_policy" parameter is required' in resp.json()["errors"][0]["detail"]
    # One numbered group needs no policy.
    assert len(answer(client, world, "resources=VCPU:1&resources1=MEMORY_MB:2048",
                      "1.25")) == 3


def test_groups_combine_on_one_provider(client, world):
    granular_world(world)
    assert answer(client, world, "resources=VCPU:3,MEMORY_MB:512&resources1=VCPU:1,"
                  "MEMORY_MB:1024&resources2=VCPU:2&group_policy=none", "1.25") == {
        c(f"{cn}:VCPU:6", f"{cn}:MEMORY_MB:1536") for cn in ("cn_left", "cn_middle", "cn_right")}
    # Three VGPU groups fit only where max_unit allows 3 at once.
    assert answer(client, world, "resources=VGPU:1&resources1=VGPU:1&resources2=VGPU:1"
                  "&group_policy=none", "1.25") == {c("cn_left:VGPU:3")}


def test_granular_sharing_traits_and_aggregates(client, world):
    granular_world(world)
    assert answer(client, world, "resources1=VCPU:1,MEMORY_MB:1024&resources2=DISK_GB:100"
                  "&required2=CUSTOM_DISK_SSD&group_policy=isolate", "1.25") == {
        c("cn_left:VCPU:1", "cn_left:MEMORY_MB:1024", "shr_disk_1:DISK_GB:100"),
        c("cn_middle:VCPU:1", "cn_middle:MEMORY_MB:1024", "shr_disk_1:DISK_GB:100"),
    }
    assert answer(client, world, f"resources1=VCPU:1&resources2=DISK_GB:100"
                  f"&member_of2={AGG_C}&group_policy=none", "1.25") == {
        c("cn_right:VCPU:1", "cn_right:DISK_GB:100")}
    assert answer(client, world, "resources_compute=VCPU:1&required_compute=!HW_CPU_X86_SSE"
                  "&resources_disk=DISK_GB:100&required_disk=CUSTOM_DISK_SSD"
                  f"&member_of_disk=in:{AGG_A},{AGG_C}&group_policy=none", "1.33") == {
        c("cn_left:VCPU:1", "shr_disk_1:DISK_GB:100"),
        c("cn_right:VCPU:1", "cn_right:DISK_GB:100"),
    }
    assert answer(client, world, "resources1=DISK_GB:800", "1.25") == {
        c("shr_disk_1:DISK_GB:800"), c("shr_disk_2:DISK_GB:800")}
    assert answer(client, world, "resources=VCPU:2,MEMORY_MB:2048,SRIOV_NET_VF:1,"
                  "CUSTOM_NET_MBPS:2000&resources1=SRIOV_NET_VF:1,CUSTOM_NET_MBPS:3000",
                  "1.25") == {c("cn_right:VCPU:2", "cn_right:MEMORY_MB:2048",
                                "shr_net:SRIOV_NET_VF:2", "shr_net:CUSTOM_NET_MBPS:5000")}


def test_member_of_from_1_21(client, world):
    granular_world(world)
    assert answer(client, world, f"resources=VCPU:1&member_of={AGG_C}", "1.21") == {
        c("cn_right:VCPU:1")}
    assert answer(client, world, f"resources=VCPU:1&member_of=in:{AGG_A},{AGG_C}",
                  "1.21") == {c("cn_left:VCPU:1"), c("cn_middle:VCPU:1"), c("cn_right:VCPU:1")}
    assert answer(client, world, f"resources=VCPU:1&member_of={AGG_A}&member_of={AGG_B}",
                  "1.24") == {c("cn_middle:VCPU:1")}
    assert answer(client, world, f"resources=VCPU:1&member_of=!{AGG_A}", "1.32") == {
        c("cn_right:VCPU:1")}
    resp = client.get(f"/allocation_candidates?resources=VCPU:1&member_of={AGG_A},{AGG_B}",
                      version="1.21")
    assert resp.status_code == 400 and "must be prefixed with the 'in:'" in resp.text
    assert client.get(f"/allocation_candidates?resources=VCPU:1&member_of={AGG_A}",
                      version="1.20").status_code == 400
    for query, version in ((f"member_of={AGG_A}&member_of={AGG_B}", "1.23"),
                           (f"member_of=!{AGG_A}", "1.31")):
        resp = client.get(f"/allocation_candidates?resources=VCPU:1&{query}", version=version)
        assert resp.status_code == 400, (query, version)
    # String suffixes arrive at 1.33.
    assert client.get("/allocation_candidates?resources_X=VCPU:1",
                      version="1.32").status_code == 400


def test_root_required_from_1_35(client, world):
    granular_world(world)
    assert answer(client, world, "resources=VCPU:1&root_required=HW_CPU_X86_AVX2,"
                  "!HW_CPU_X86_SSE", "1.35") == {c("cn_left:VCPU:1")}
    # A sharing provider anchors only its own tree: it can serve a request alone.
    assert answer(client, world, "resources=VCPU:1,DISK_GB:10"
                  "&root_required=MISC_SHARES_VIA_AGGREGATE", "1.35") == set()
    assert answer(client, world, "resources=DISK_GB:10&root_required=MISC_SHARES_VIA_AGGREGATE",
                  "1.35") == {c("shr_disk_1:DISK_GB:10"), c("shr_disk_2:DISK_GB:10")}
    assert client.get("/allocation_candidates?resources=VCPU:1&root_required=CUSTOM_FOO",
                      version="1.34").status_code == 400


def test_any_of_traits_from_1_39(client, world):
    granular_world(world)
    query = "resources=VCPU:1&required=in:HW_CPU_X86_SSE,HW_CPU_X86_MMX"
    assert answer(client, world, query, "1.39") == {c("cn_middle:VCPU:1"), c("cn_right:VCPU:1")}
    assert client.get(f"/allocation_candidates?{query}", version="1.38").status_code == 400


def test_a_query_asked_again_is_judged_by_each_requests_version(client, world):
    # Parsed queries are remembered per (query, version): asking the same query at
    # alternating versions, and a bad one twice, must answer as if asked once.
    granular_world(world)
    query = "resources=VCPU:1&required=in:HW_CPU_X86_SSE,HW_CPU_X86_MMX"
    for _ in range(2):
        assert answer(client, world, query, "1.39") == {c("cn_middle:VCPU:1"),
                                                        c("cn_right:VCPU:1")}
        assert client.get(f"/allocation_candidates?{query}", version="1.38").status_code == 400
    bad = "resources1=VCPU:1&resources2=VCPU:1"   # two groups and no group_policy
    for _ in range(2):
        resp = client.get(f"/allocation_candidates?{bad}", version="1.33")
        assert resp.status_code == 400
        assert "group_policy" in resp.json()["errors"][0]["detail"]


def test_unknown_names(client, world):
    granular_world(world)
    resp = client.get("/allocation_candidates?resources=MCPU:1")
    assert resp.status_code == 400
    assert "Invalid resource class in resources parameter: No such resource class MCPU." \
        in resp.json()["errors"][0]["detail"]
    # Placement reports an unknown trait in a later group only if earlier ones matched.
    masked = "resources1=VCPU:99&resources2=VCPU:1&required2=CUSTOM_NOPE&group_policy=none"
    assert get(client, masked)["allocation_requests"] == []
    unmasked = "resources1=VCPU:1&resources2=VCPU:1&required2=CUSTOM_NOPE&group_policy=none"
    assert client.get(f"/allocation_candidates?{unmasked}").status_code == 400


# ---- same_subtree and resourceless groups ----------------------------------------------


def test_same_subtree_with_resourceless_groups_from_1_36(client, world):
    numa_world(world)
    ports = ("resources_P1=CUSTOM_VF:2&required_P1=CUSTOM_PHYSNET1"
             "&resources_P2=CUSTOM_VF:2&required_P2=CUSTOM_PHYSNET2")
    query = f"resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&{ports}" \
            "&same_subtree=_NIC,_P1,_P2&group_policy=none"
    body = get(client, query, "1.36")
    assert len(body["allocation_requests"]) == 2  # VCPU from either NUMA node
    for ar in body["allocation_requests"]:
        assert ar["mappings"]["_NIC"] == [world["nic"]]
        # The resourceless group's provider is mapped but allocates nothing.
        assert world["nic"] not in ar["allocations"]
    resp = client.get("/allocation_candidates?resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT",
                      version="1.36")
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["code"] == "placement.query.bad_value"
    # Groups that must share a subtree: VCPU and FPGA under one NUMA node.
    assert answer(client, world, "resources_C=VCPU:1&resources_A=FPGA:1&same_subtree=_C,_A"
                  "&group_policy=none", "1.36") == {c("numa1:VCPU:1", "fpga1:FPGA:1")}
    assert answer(client, world, "resources_C=VCPU:1&required_N=HW_NUMA_ROOT,CUSTOM_FOO"
                  "&same_subtree=_C,_N&group_policy=isolate", "1.36") == set()
    assert answer(client, world, "resources_C=VCPU:1&required_N=HW_NUMA_ROOT,CUSTOM_FOO"
                  "&same_subtree=_C,_N&group_policy=none", "1.36") == {c("numa1:VCPU:1")}


# ---- the index follows writes ---------------------------------------------------------


def _provider(client, name: str, inventory: dict[str, int]) -> str:
    uuid = str(uuidlib.uuid4())
    assert client.post("/resource_providers", json={"name": name, "uuid": uuid}).status_code \
        in (200, 201)
    resp = client.put(f"/resource_providers/{uuid}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {rc: {"total": n} for rc, n in inventory.items()}})
    assert resp.status_code == 200, resp.text
    return uuid


def test_every_write_through_http_is_seen_by_the_next_query(client, world):
    first = _provider(client, "host1", {"VCPU": 4})
    assert {tuple(ar["allocations"]) for ar in
            get(client, "resources=VCPU:4")["allocation_requests"]} == {(first,)}
    second = _provider(client, "host2", {"VCPU": 4})
    assert len(get(client, "resources=VCPU:4")["allocation_requests"]) == 2
    consumer = str(uuidlib.uuid4())
    resp = client.put(f"/allocations/{consumer}", json={
        "allocations": {first: {"resources": {"VCPU": 2}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status_code == 204, resp.text
    body = get(client, "resources=VCPU:4")
    assert [list(ar["allocations"]) for ar in body["allocation_requests"]] == [[second]]
    assert get(client, "resources=VCPU:2")["provider_summaries"][first]["resources"][
        "VCPU"] == {"capacity": 4, "used": 2}
    gen = client.get(f"/resource_providers/{second}").json()["generation"]
    resp = client.put(f"/resource_providers/{second}/traits", json={
        "resource_provider_generation": gen, "traits": ["HW_CPU_X86_AVX2"]})
    assert resp.status_code == 200, resp.text
    assert [list(ar["allocations"]) for ar in get(
        client, "resources=VCPU:1&required=HW_CPU_X86_AVX2")["allocation_requests"]] == [[second]]
    assert client.delete(f"/allocations/{consumer}").status_code == 204
    assert len(get(client, "resources=VCPU:4")["allocation_requests"]) == 2
    assert client.delete(f"/resource_providers/{first}").status_code == 204
    assert [list(ar["allocations"]) for ar in
            get(client, "resources=VCPU:4")["allocation_requests"]] == [[second]]


@pytest.mark.parametrize("version", ["1.10", "1.12", "1.28", "1.34", "1.39"])
def test_every_candidate_is_a_valid_allocation_body(client, world, version):
    shared_world(world)
    granular_world(world)
    minor = int(version.split(".")[1])
    queries = ["resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100"]
    if minor >= 25:
        queries.append("resources=VCPU:1&resources1=DISK_GB:100&resources2=SRIOV_NET_VF:1"
                       "&group_policy=none")
    if minor >= 29:
        queries.append("resources=VCPU:1,SRIOV_NET_VF:4")
    for query in queries:
        for ar in get(client, query, version)["allocation_requests"]:
            consumer = str(uuidlib.uuid4())
            body = {**ar, "project_id": "p", "user_id": "u"}
            if minor >= 28:
                body["consumer_generation"] = None
            if minor >= 38:
                body["consumer_type"] = "INSTANCE"
            resp = client.put(f"/allocations/{consumer}", json=body, version=version)
            assert resp.status_code == 204, (query, ar, resp.text)
            assert client.delete(f"/allocations/{consumer}", version=version).status_code == 204


def test_another_worker_sees_writes_at_its_next_query(client, placement_app, database_url):
    """Each worker process keeps its own index; both follow the same change log."""
    other_app = PlacementApp(make_config(database_url), db.create_engine(database_url))
    try:
        with httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(other_app)),
                          base_url="http://placement.test") as http:
            other = PlacementClient(http)
            assert get(other, "resources=VCPU:1")["allocation_requests"] == []
            host = _provider(client, "host", {"VCPU": 2})
            assert [list(ar["allocations"]) for ar in
                    get(other, "resources=VCPU:1")["allocation_requests"]] == [[host]]
            resp = client.put(f"/allocations/{uuidlib.uuid4()}", json={
                "allocations": {host: {"resources": {"VCPU": 2}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
            assert resp.status_code == 204, resp.text
            assert get(other, "resources=VCPU:1")["allocation_requests"] == []
    finally:
        other_app.engine.dispose()
