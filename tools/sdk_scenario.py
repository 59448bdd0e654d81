#!/usr/bin/env python3
"""openstacksdk against a Stratus cloud, as automation (Ansible's openstack.cloud, scripts)
uses it: ``openstack.connect()`` from ``OS_CLOUD`` and a clouds.yaml, then an image with
properties, a port with a minimum-bandwidth policy, a server from both, resize and
confirm, migrate and confirm, its allocations from Placement, delete.

Run with the Python of a virtualenv holding openstacksdk (tests/functional/
test_openstack_cloud.py uses the openstack CLI's). Prints progress, then the names of
the steps done as one JSON line; exits non-zero at the first step that fails.
"""

from __future__ import annotations

import json
import sys
import uuid

import openstack  # type: ignore[import-not-found]


def main() -> int:
    done: list[str] = []
    conn = openstack.connect()

    def step(name: str) -> None:
        done.append(name)
        print(f"ok: {name}", file=sys.stderr, flush=True)

    services = {kind: conn.endpoint_for(kind) for kind in
                ("identity", "compute", "placement", "network", "image")}
    assert all(services.values()), services
    step("catalog")

    suffix = uuid.uuid4().hex[:6]
    image = conn.image.create_image(
        name=f"sdk-image-{suffix}", data=b"a tiny disk" * 100, disk_format="qcow2",
        container_format="bare", hw_architecture="x86_64", os_type="linux")
    image = conn.image.get_image(image.id)
    assert image.status == "active" and image.properties.get("hw_architecture") == "x86_64", \
        image
    step("image")

    network = conn.network.find_network("physnet1")
    policy = conn.network.create_qos_policy(name=f"sdk-silver-{suffix}")
    conn.network.create_qos_minimum_bandwidth_rule(policy, min_kbps=5000, direction="egress")
    port = conn.network.create_port(network_id=network.id, qos_policy_id=policy.id,
                                    name=f"sdk-port-{suffix}")
    assert port.resource_request, port
    step("port")

    tiny = conn.compute.find_flavor("m1.tiny")
    small = conn.compute.find_flavor("m1.small")
    server = conn.compute.create_server(name=f"sdk-vm-{suffix}", image_id=image.id,
                                        flavor_id=tiny.id, networks=[{"port": port.id}])
    server = conn.compute.wait_for_server(server, wait=120)
    assert server.status == "ACTIVE", server
    assert server.image.id == image.id, server.image
    step("server")

    conn.compute.resize_server(server, small.id)
    server = conn.compute.wait_for_server(server, status="VERIFY_RESIZE", wait=120)
    conn.compute.confirm_server_resize(server)
    server = conn.compute.wait_for_server(server, status="ACTIVE", wait=120)
    assert server.flavor.name == "m1.small", server.flavor
    step("resize")

    before = server.compute_host
    conn.compute.migrate_server(server)
    server = conn.compute.wait_for_server(server, status="VERIFY_RESIZE", wait=120)
    assert server.compute_host != before, (before, server.compute_host)
    conn.compute.confirm_server_resize(server)
    server = conn.compute.wait_for_server(server, status="ACTIVE", wait=120)
    step("migrate")

    answer = conn.placement.get(f"/allocations/{server.id}", microversion="1.39")
    held = [a["resources"] for a in answer.json()["allocations"].values()]
    assert {"VCPU": 1, "MEMORY_MB": 2048, "DISK_GB": 20} in held, held
    assert {"NET_BW_EGR_KILOBIT_PER_SEC": 5000} in held, held
    step("allocations")

    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=120)
    assert conn.placement.get(f"/allocations/{server.id}",
                              microversion="1.39").json()["allocations"] == {}
    step("delete")
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
