"""A NIC whose packet rate is on its agent (Neutron's Open vSwitch layout): the fleet file
says so, and the host's provider tree puts the rate on an agent provider above the NIC."""

from __future__ import annotations

import pytest

from stratus.compute.drivers.libvirt import build_tree
from stratus.compute.fleet import FleetError, parse_fleet
from stratus.compute.shapes import LibvirtShape, NetworkDevice


def test_the_rate_goes_on_the_agent_and_the_bandwidth_stays_on_the_nic() -> None:
    nic = NetworkDevice("ens1", "physnet1", ("normal", "direct"), egress_kbps=100,
                        ingress_kbps=200, packet_rate_kpps=10, packet_rate_on="agent")
    tree = build_tree("h1", LibvirtShape("s", vcpus=1, memory_mb=1, disk_gb=1,
                                         network_devices=(nic,)))
    agent, device = tree.by_name("h1:ens1:agent"), tree.by_name("h1:ens1")
    assert device.parent_uuid == agent.uuid and agent.parent_uuid == tree.by_name("h1").uuid
    assert set(agent.inventories) == {"NET_PACKET_RATE_KILOPACKET_PER_SEC"}
    assert set(device.inventories) == {"NET_BW_EGR_KILOBIT_PER_SEC",
                                       "NET_BW_IGR_KILOBIT_PER_SEC"}
    assert agent.traits == {"CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT"}
    assert "CUSTOM_PHYSNET_PHYSNET1" in device.traits


def test_the_default_keeps_everything_on_the_nic_and_bad_values_are_refused() -> None:
    fleet = parse_fleet({"shapes": {"s": {"vcpus": 1, "memory_mb": 1, "disk_gb": 1,
                                          "network_devices": [{
                                              "name": "ens1", "physnet": "p",
                                              "packet_rate_kpps": 5}]}},
                         "hosts": [{"shape": "s", "name": "h{n}"}]})
    [device] = fleet.hosts[0].shape.network_devices
    assert device.packet_rate_on == "device"
    with pytest.raises(FleetError, match="packet_rate_on"):
        parse_fleet({"shapes": {"s": {"vcpus": 1, "memory_mb": 1, "disk_gb": 1,
                                      "network_devices": [{
                                          "name": "ens1", "physnet": "p",
                                          "packet_rate_on": "bridge"}]}},
                     "hosts": [{"shape": "s"}]})
