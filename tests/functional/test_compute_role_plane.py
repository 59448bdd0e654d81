"""The compute plane with computes that reach Placement as their own ``compute``-role
user: what the resource tracker and recovery send is within the role. Boot, disable
(the trait on its own root), evacuate, and the source's clean-up when it comes back."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.compute_world import World, eventually


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def _migration(world: World, sid: str) -> dict[str, Any]:
    return dict(world.client.get("/os-migrations", params={"instance_uuid": sid}
                                 ).json()["migrations"][0])


def _held(world: World, consumer: str) -> dict[str, Any]:
    return dict(world.placement.get_allocations(consumer)["allocations"])


def test_computes_with_the_compute_role_run_the_plane(world, caplog):
    cmp1 = world.add_compute("cmp1", own_placement_user=True)
    world.add_compute("cmp2", own_placement_user=True)
    # Each registered its own tree: root, inventory, traits, the cell's aggregate.
    for host in ("cmp1", "cmp2"):
        inventories, _ = world.placement.get_inventories(world.root(host))
        assert inventories["VCPU"]["total"] == 4
        assert world.placement.get_aggregates(world.root(host))[0]

    small = world.flavor("small")
    sid = world.boot(small["id"], networks="none").json()["server"]["id"]
    server = world.settled(sid)
    assert server["status"] == "ACTIVE", server
    source = server["OS-EXT-SRV-ATTR:host"]
    target = "cmp2" if source == "cmp1" else "cmp1"
    service_id = world.service_id(source)

    # A disable reaches Placement through the compute: the trait on its own root.
    world.client.put(f"/os-services/{service_id}", json={"status": "disabled"})
    assert eventually(lambda: "COMPUTE_STATUS_DISABLED" in world.traits(source), 10)
    world.client.put(f"/os-services/{service_id}", json={"status": "enabled"})
    assert eventually(lambda: "COMPUTE_STATUS_DISABLED" not in world.traits(source), 10)

    # Evacuate; the source frees the migration's allocations (its own tree) when back.
    world.computes[source].stop()
    world.client.put(f"/os-services/{service_id}", json={"forced_down": True})
    resp = world.client.post(f"/servers/{sid}/action", json={"evacuate": {}})
    assert resp.status_code == 200, resp.text
    assert eventually(lambda: world.client.get(f"/servers/{sid}").json()["server"][
        "OS-EXT-SRV-ATTR:host"] == target and world.settled(sid)["status"] == "ACTIVE", 20)
    migration = _migration(world, sid)
    assert list(_held(world, migration["uuid"])) == [world.root(source)]
    world.computes[source].start()
    world.client.put(f"/os-services/{service_id}", json={"forced_down": False})
    assert _migration(world, sid)["status"] == "completed"
    assert _held(world, migration["uuid"]) == {}
    assert world.audit() == []
    assert cmp1.placement is not world.placement
    refusals = [r.getMessage() for r in caplog.records if "Refused" in r.getMessage()]
    assert refusals == []
