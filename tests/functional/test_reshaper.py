"""POST /reshaper: inventories and allocations of several providers and consumers, atomically."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.test_allocations import (
    USER,
    add_provider,
    body,
    error,
    new_uuid,
    usages,
)

pytestmark = pytest.mark.all_backends

SERVICE = {"X-Auth-Token": "nova", "X-Roles": "service"}
ALT_USER = "b2e599e0-ded8-47fd-b8ab-ceb7fca578bd"
DISK = {"total": 2048, "step_size": 10, "min_unit": 10, "max_unit": 1200}
VCPU = {"total": 10, "max_unit": 8}


def reshape(client: Any, data: Any, version: str = "1.30", **headers: str) -> Any:
    return client.post("/reshaper", json=data, version=version, headers={**SERVICE, **headers})


def generation(client: Any, rp: str) -> int:
    return client.get(f"/resource_providers/{rp}").json()["generation"]


def entry(allocs: dict[str, dict[str, int]], gen: Any, user: str = USER, **extra: Any) -> dict:
    return {**body(allocs, gen, user=user), **extra}


@pytest.fixture
def world(client: Any) -> dict[str, str]:
    """A compute node with DISK_GB and VCPU used by three consumers, and an empty child."""
    root = add_provider(client, "cn", {"DISK_GB": DISK, "VCPU": VCPU})
    c0, c1, c2 = new_uuid(), new_uuid(), new_uuid()
    for consumer, allocs, user in ((c0, {"DISK_GB": 1000}, USER), (c1, {"VCPU": 8}, USER),
                                   (c2, {"DISK_GB": 20, "VCPU": 1}, ALT_USER)):
        resp = client.put(f"/allocations/{consumer}", version="1.28",
                          json=body({root: allocs}, None, user=user))
        assert resp.status_code == 204, resp.text
    child = add_provider(client, "cn_numa0", parent=root)
    return {"root": root, "child": child, "c0": c0, "c1": c1, "c2": c2}


def move_vcpu_to_child(w: dict[str, str], root_gen: int, child_gen: int = 0) -> dict:
    """Placement's own example: VCPU inventory and its allocations move to the child."""
    return {
        "inventories": {
            w["root"]: {"resource_provider_generation": root_gen,
                        "inventories": {"DISK_GB": DISK}},
            w["child"]: {"resource_provider_generation": child_gen,
                         "inventories": {"VCPU": VCPU}},
        },
        "allocations": {
            w["c0"]: entry({w["root"]: {"DISK_GB": 1000}}, 1),
            w["c1"]: entry({w["child"]: {"VCPU": 8}}, 1),
            w["c2"]: entry({w["root"]: {"DISK_GB": 20}, w["child"]: {"VCPU": 1}}, 1,
                           user=ALT_USER),
        },
    }


def snapshot(client: Any, w: dict[str, str]) -> dict:
    """Everything a failed reshape must leave as it was."""
    return {
        "providers": {k: client.get(f"/resource_providers/{w[k]}/allocations").json()
                      for k in ("root", "child")},
        "inventories": {k: client.get(f"/resource_providers/{w[k]}/inventories").json()
                        for k in ("root", "child")},
        "consumers": {k: client.get(f"/allocations/{w[k]}").json() for k in ("c0", "c1", "c2")},
    }


# ---- the route, policy and schema ---------------------------------------------------


def test_post_only_from_1_30(client):
    resp = client.get("/reshaper")
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"
    assert reshape(client, {}, version="1.29").status_code == 404


def test_needs_the_service_role(client):
    # Placement's default policy: admin alone is not enough.
    assert client.post("/reshaper", json={}, version="1.30").status_code == 403
    assert reshape(client, {}, **{"X-Auth-Token": "user", "X-Roles": "member"}).status_code == 403
    resp = reshape(client, {"cows": "moo"})
    assert resp.status_code == 400
    assert "JSON does not validate" in error(resp)["detail"]


def test_schema(client, world):
    root_gen = generation(client, world["root"])
    good = move_vcpu_to_child(world, root_gen)
    missing = {"inventories": good["inventories"]}
    assert reshape(client, missing).status_code == 400
    assert reshape(client, {**good, "inventories": {}}).status_code == 400
    bad_inventory = move_vcpu_to_child(world, root_gen)
    bad_inventory["inventories"][world["root"]]["inventories"]["DISK_GB"] = {
        **DISK, "bad_field": "moo"}
    bad_allocation = move_vcpu_to_child(world, root_gen)
    bad_allocation["allocations"][world["c0"]]["bad_field"] = "moo"
    no_generation = move_vcpu_to_child(world, root_gen)
    del no_generation["allocations"][world["c0"]]["consumer_generation"]
    for data in (bad_inventory, bad_allocation, no_generation):
        resp = reshape(client, data)
        assert resp.status_code == 400, resp.text
        assert "JSON does not validate" in error(resp)["detail"]


# ---- refusals leave everything as it was --------------------------------------------


def test_refusals(client, world):
    root, child = world["root"], world["child"]
    gen = generation(client, root)
    before = snapshot(client, world)

    def refused(data: dict, status: int, text: str, code: str | None = None) -> None:
        resp = reshape(client, data)
        assert resp.status_code == status, resp.text
        assert text in error(resp)["detail"]
        if code is not None:
            assert error(resp)["code"] == code
        assert snapshot(client, world) == before

    only_vcpu = {root: {"resource_provider_generation": gen,
                        "inventories": {"VCPU": {"total": 1}}}}
    # DISK_GB would go while c0 and c2 still hold it.
    refused({"inventories": only_vcpu, "allocations": {}}, 409,
            f"update conflict: Inventory for 'DISK_GB' on resource provider '{root}' in use.",
            "placement.inventory.inuse")
    # The existing VCPU allocations (9) do not fit next to a new one on 1 VCPU.
    refused({"inventories": only_vcpu, "allocations": {
        new_uuid(): entry({root: {"VCPU": 1}}, None)}}, 409, "Unable to allocate inventory")
    refused({"inventories": {root: {"resource_provider_generation": gen - 1,
                                    "inventories": {"VCPU": {"total": 1}}}},
             "allocations": {}}, 409,
            f"resource provider generation conflict for provider {root}: "
            f"actual: {gen}, given: {gen - 1}", "placement.concurrent_update")
    refused({"inventories": only_vcpu, "allocations": {
        new_uuid(): entry({root: {"VCPU": 1}}, 99)}}, 409,
            "consumer generation conflict - expected null but got 99",
            "placement.concurrent_update")

    nowhere = move_vcpu_to_child(world, gen)
    nowhere["inventories"][new_uuid()] = {"resource_provider_generation": 0,
                                          "inventories": {"VCPU": VCPU}}
    refused(nowhere, 400, "in inventories not found", "placement.resource_provider.not_found")

    steel = move_vcpu_to_child(world, gen)
    steel["inventories"][root]["inventories"] = {"DISK_OF_STEEL": DISK}
    refused(steel, 400, "malformed reshaper data: No such resource class DISK_OF_STEEL.")

    too_big = move_vcpu_to_child(world, gen)
    too_big["inventories"][root]["inventories"]["DISK_GB"] = {**DISK, "max_unit": 600}
    refused(too_big, 409, "The requested amount would violate inventory constraints.")

    bad_capacity = move_vcpu_to_child(world, gen)
    bad_capacity["inventories"][child]["inventories"]["VCPU"] = {**VCPU, "reserved": 11}
    refused(bad_capacity, 400, "The reserved value is greater than total.")

    elsewhere = move_vcpu_to_child(world, gen)
    elsewhere["allocations"][world["c1"]]["allocations"] = {new_uuid(): {"resources": {"VCPU": 8}}}
    refused(elsewhere, 400, "that does not exist.")


# ---- successful reshapes --------------------------------------------------------------


def test_move_to_child_and_back(client, world):
    root, child = world["root"], world["child"]
    gen = generation(client, root)
    resp = reshape(client, move_vcpu_to_child(world, gen))
    assert resp.status_code == 204, resp.text
    assert usages(client, root) == {"DISK_GB": 1020}
    assert usages(client, child) == {"VCPU": 9}
    # Interim inventory, allocations, final inventory: three moves each.
    assert generation(client, root) == gen + 3
    assert generation(client, child) == 3
    assert client.get(f"/allocations/{world['c1']}").json()["allocations"] == {
        child: {"generation": 3, "resources": {"VCPU": 8}}}

    # Back again, with new consumers taking over and c1 giving up its allocations.
    newer, newest = new_uuid(), new_uuid()
    resp = reshape(client, {
        "inventories": {
            root: {"resource_provider_generation": gen + 3,
                   "inventories": {"DISK_GB": DISK, "VCPU": VCPU}},
            child: {"resource_provider_generation": 3, "inventories": {}},
        },
        "allocations": {
            world["c0"]: entry({root: {"DISK_GB": 1000}}, 2),
            newer: entry({root: {"VCPU": 8}}, None),
            newest: entry({root: {"DISK_GB": 20, "VCPU": 1}}, None, user=ALT_USER),
            world["c1"]: entry({}, 2),
            world["c2"]: entry({root: {"DISK_GB": 20}}, 2, user=ALT_USER),
        },
    })
    assert resp.status_code == 204, resp.text
    assert usages(client, root) == {"DISK_GB": 1040, "VCPU": 9}
    assert usages(client, child) == {}
    assert generation(client, root) == gen + 6
    # The child had no interim step (its new inventory is empty): two moves.
    assert generation(client, child) == 5
    # c1 holds nothing any more, so it is gone: its generation starts again from null.
    assert client.get(f"/allocations/{world['c1']}").json() == {"allocations": {}}
    assert client.get(f"/allocations/{newer}").json()["consumer_generation"] == 1


def test_mappings_from_1_34_and_consumer_type_from_1_38(client, world):
    root = world["root"]
    data = move_vcpu_to_child(world, generation(client, root))
    data["allocations"][world["c0"]]["mappings"] = {"": [root]}
    resp = reshape(client, data, version="1.33")
    assert resp.status_code == 400
    assert "Additional properties are not allowed" in error(resp)["detail"]
    resp = reshape(client, data, version="1.38")
    assert resp.status_code == 400
    assert "'consumer_type' is a required property" in error(resp)["detail"]
    for consumer in ("c0", "c1", "c2"):
        data["allocations"][world[consumer]]["consumer_type"] = "RESHAPED"
    resp = reshape(client, data, version="1.38")
    assert resp.status_code == 204, resp.text
    assert client.get(f"/allocations/{world['c1']}").json()["consumer_type"] == "RESHAPED"
