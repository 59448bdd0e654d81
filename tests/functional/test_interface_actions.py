"""Interface attach and detach are recorded as Nova records them: an instance action
``attach_interface`` / ``detach_interface`` under the request's id, with a
``compute_*`` event that ends Success once the port is fully (de)allocated: what
Tempest's interface waiters read."""

from __future__ import annotations

import pytest

from tests.functional.compute_world import World
from tests.functional.test_servers_with_ports import bw_policy, nic, port, provider_net


@pytest.fixture
def world(tmp_path, placement_app, database_url):
    w = World(tmp_path, placement_app, database_url)
    w.add_compute("cmp1", nics=(nic("ens1", "physnet1"),))
    yield w
    w.close()


def test_attach_and_detach_are_instance_actions_with_compute_events(world):
    net = provider_net(world, "physnet1")
    flavor = world.flavor()
    sid = world.client.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor["id"], "networks": "none"}}).json()["server"]["id"]
    assert world.settled(sid)["status"] == "ACTIVE"
    p = port(world, net, bw_policy(world, egress=1000))

    attached = world.client.post(f"/servers/{sid}/os-interface",
                                 json={"interfaceAttachment": {"port_id": p["id"]}})
    assert attached.status_code == 200, attached.text
    detached = world.client.delete(f"/servers/{sid}/os-interface/{p['id']}")
    assert detached.status_code == 202, detached.text

    for resp, action in ((attached, "attach_interface"), (detached, "detach_interface")):
        request_id = resp.headers["x-openstack-request-id"]
        shown = world.client.get(f"/servers/{sid}/os-instance-actions/{request_id}")
        assert shown.status_code == 200, shown.text
        body = shown.json()["instanceAction"]
        assert body["action"] == action
        assert [(e["event"], e["result"]) for e in body["events"]] == [
            (f"compute_{action}", "Success")]
