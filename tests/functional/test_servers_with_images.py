"""Boots by image through the compute API: the image must be there, active and fit the
flavor; its properties steer the scheduler (architecture and traits:* as required
traits in Placement, img_hv_type through the image_properties host filter), and the
server shows its image and key pair as Nova does."""

from __future__ import annotations

import pytest

from tests.functional.compute_world import World

pytestmark = pytest.mark.all_backends


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    yield w
    w.close()


def boot(world: World, image: str, **server: object):
    found = world.client.get("/flavors").json()["flavors"]
    flavor = found[0] if found else world.flavor("small", vcpus=1, ram=512, disk=1)
    return world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor["id"], "imageRef": image, **server}})


def test_an_image_for_an_architecture_some_host_has_lands_there(world):
    world.add_compute("x86", arch="x86_64")
    world.add_compute("arm", arch="aarch64")
    image = world.image("arm-image", hw_architecture="aarch64", os_type="linux")
    resp = boot(world, image)
    assert resp.status_code == 202, resp.text
    server = world.settled(resp.json()["server"]["id"])
    assert server["status"] == "ACTIVE"
    assert server["OS-EXT-SRV-ATTR:host"] == "arm"
    assert server["image"]["id"] == image
    assert server["image"]["links"][0]["href"].endswith(f"/images/{image}")


def test_an_image_for_an_architecture_no_host_has_is_no_valid_host_saying_so(world):
    world.add_compute("x86", arch="x86_64")
    image = world.image("s390", hw_architecture="s390x")
    server = world.settled(boot(world, image).json()["server"]["id"])
    assert server["status"] == "ERROR"
    assert "HW_ARCH_S390X" in server["fault"]["message"]


def test_required_traits_of_the_image_pick_the_host_that_has_them(world):
    world.add_compute("plain")
    world.add_compute("gold", traits=frozenset({"CUSTOM_GOLD"}))
    image = world.image("gold-only", **{"traits:CUSTOM_GOLD": "required"})
    server = world.settled(boot(world, image).json()["server"]["id"])
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "gold")


def test_a_hypervisor_type_no_host_runs_is_refused_by_the_host_filter(world):
    world.add_compute("cmp1")
    image = world.image("xen-image", img_hv_type="xen")
    server = world.settled(boot(world, image).json()["server"]["id"])
    assert server["status"] == "ERROR"
    assert "hypervisor type xen" in server["fault"]["message"]
    kvm = world.image("kvm-image", img_hv_type="kvm")
    assert world.settled(boot(world, kvm).json()["server"]["id"])["status"] == "ACTIVE"


def test_bad_image_references_are_400(world):
    world.add_compute("cmp1")
    queued = world.image("empty", data=b"")
    big = world.image("big", min_ram=4096)
    for ref, words in (("not-an-id", "Invalid imageRef"),
                       ("6f1e9e0e-9b5b-4a49-9f39-2ef3d1b0c0aa", "could not be found"),
                       (queued, "not active"), (big, "memory is too small")):
        resp = boot(world, ref)
        assert resp.status_code == 400, (ref, resp.text)
        assert words in resp.json()["badRequest"]["message"]


def test_key_name_must_be_the_callers_and_is_shown(world):
    world.add_compute("cmp1")
    image = world.image("cirros")
    assert boot(world, image, key_name="nope").status_code == 400
    assert world.client.post("/os-keypairs", json={"keypair": {"name": "k1"}}
                             ).status_code == 201
    resp = boot(world, image, key_name="k1")
    assert resp.status_code == 202, resp.text
    server = world.settled(resp.json()["server"]["id"])
    assert (server["status"], server["key_name"]) == ("ACTIVE", "k1")
    other = world.client.as_user("bob:team")
    flavor_id = world.client.get("/flavors").json()["flavors"][0]["id"]
    refused = other.post("/servers", json={"server": {
        "name": "b", "flavorRef": flavor_id, "imageRef": image, "key_name": "k1"}})
    assert refused.status_code == 400
