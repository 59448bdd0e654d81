"""The real ``openstack`` CLI against ``stratus serve`` for what a project does with its
network: security groups and rules, a router between its subnet and the external
network ``public`` serve seeds, a floating IP on a port, and a server's groups through
the compute API. As the demo user of serve's clouds.yaml, nothing else set."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.functional.test_openstack_cloud import (  # noqa: F401 (fixtures)
    Openstack,
    client_env,
    cloud,
    openstack,
)

pytestmark = pytest.mark.long


def refused(osc: Openstack, *args: str) -> str:
    done = subprocess.run([str(osc.binary), *args], capture_output=True, text=True,
                          env=osc.env, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode != 0, f"openstack {' '.join(args)} was not refused"
    return done.stderr


@pytest.mark.timeout(1800)
def test_a_project_builds_its_network_with_the_openstack_cli(openstack, cloud):  # noqa: F811
    demo = Openstack(openstack, client_env(cloud, "stratus-demo"))

    # Security groups: a rule, the same rule again (409), the default group there.
    web = demo("security", "group", "create", "web", "--description", "front ends")
    rule = demo("security", "group", "rule", "create", "--protocol", "tcp", "--dst-port",
                "22", "--remote-ip", "10.0.0.0/8", "web")
    assert (rule["protocol"], rule["port_range_min"], rule["port_range_max"],
            rule["remote_ip_prefix"]) == ("tcp", 22, 22, "10.0.0.0/8")
    assert "already exists" in refused(demo, "security", "group", "rule", "create",
                                       "--protocol", "tcp", "--dst-port", "22",
                                       "--remote-ip", "10.0.0.0/8", "web")
    groups = {g["Name"] for g in demo("security", "group", "list")}
    assert groups == {"default", "web"}
    rules = demo("security", "group", "rule", "list", "web")
    assert any(r["ID"] == rule["id"] for r in rules)

    # A network with a subnet, routed to the external network.
    demo("network", "create", "net1")
    subnet = demo("subnet", "create", "--network", "net1", "--subnet-range", "10.9.0.0/24",
                  "--dns-nameserver", "10.9.0.2", "--allocation-pool",
                  "start=10.9.0.10,end=10.9.0.99", "sub1")
    assert subnet["allocation_pools"] in ([{"start": "10.9.0.10", "end": "10.9.0.99"}],
                                          "10.9.0.10-10.9.0.99")
    demo("router", "create", "r1")
    demo("router", "set", "--external-gateway", "public", "r1", json_out=False)
    demo("router", "add", "subnet", "r1", "sub1", json_out=False)
    router = demo("router", "show", "r1")
    gateway: Any = router["external_gateway_info"]
    assert gateway and gateway["network_id"] == demo("network", "show", "public")["id"]
    interfaces = demo("port", "list", "--router", "r1")
    assert [p["Fixed IP Addresses"] for p in interfaces] and "10.9.0.1" in str(interfaces)

    # A floating IP on a port of the subnet, then off it.
    port = demo("port", "create", "--network", "net1", "--security-group", "web", "p1")
    assert port["security_group_ids"] == [web["id"]]
    fip = demo("floating", "ip", "create", "public")
    assert fip["floating_ip_address"].startswith("172.24.4.")
    demo("floating", "ip", "set", "--port", "p1", fip["id"], json_out=False)
    shown = demo("floating", "ip", "show", fip["id"])
    assert (shown["port_id"], shown["router_id"], shown["fixed_ip_address"]) == (
        port["id"], router["id"], port["fixed_ips"][0]["ip_address"])
    # The router cannot lose its way to the floating IP's port while it is mapped.
    assert "floating" in refused(demo, "router", "remove", "subnet", "r1", "sub1").lower()
    demo("floating", "ip", "unset", "--port", fip["id"], json_out=False)
    demo("floating", "ip", "delete", fip["id"], json_out=False)

    # A server in the group; another group added and removed through the compute API.
    server = demo("server", "create", "--image", "cirros-0.6.2-x86_64-disk", "--flavor",
                  "m1.tiny", "--network", "net1", "--security-group", "web", "--wait", "vm")
    assert server["status"] == "ACTIVE"
    demo("security", "group", "create", "db")
    demo("server", "add", "security", "group", "vm", "db", json_out=False)
    listed = demo("port", "list", "--server", "vm", "--long")
    assert len(listed) == 1
    names = {g["name"] for g in demo("server", "show", "vm")["security_groups"]}
    assert names == {"web", "db"}
    demo("server", "remove", "security", "group", "vm", "db", json_out=False)
    assert {g["name"] for g in demo("server", "show", "vm")["security_groups"]} == {"web"}

    # Taking it apart again.
    demo("server", "delete", "--wait", "vm", json_out=False)
    demo("port", "delete", "p1", json_out=False)
    demo("router", "remove", "subnet", "r1", "sub1", json_out=False)
    demo("router", "delete", "r1", json_out=False)
    demo("network", "delete", "net1", json_out=False)
    demo("security", "group", "delete", "web", "db", json_out=False)
