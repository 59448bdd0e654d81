"""Fleet files: what `stratus serve --fleet FILE` reads, and every way to get one wrong."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from stratus.compute import fleet as fleet_mod
from stratus.compute.drivers import IronicDriver, LibvirtDriver
from stratus.compute.fleet import FleetError, aggregate_uuid, load_fleet, parse_fleet
from stratus.compute.shapes import IronicShape, LibvirtShape

EXAMPLE = """
shapes:
  standard:
    vcpus: 32
    memory_mb: 131072
    disk_gb: 1000
    reserved: {MEMORY_MB: 512}
    allocation_ratios: {VCPU: 4.0, MEMORY_MB: 1.0}
    numa_nodes: 2
    network_devices:
      - {name: ens1, physnet: physnet1, vnic_types: [normal, direct],
         egress_kbps: 10000000, ingress_kbps: 10000000}
    traits: [HW_CPU_X86_AVX2]
  metal:
    driver: ironic
    nodes:
      - {count: 4, resource_class: baremetal-gold, traits: [CUSTOM_RAID5]}
hosts:
  - {count: 3, shape: standard, name: "cmp{n:04d}", availability_zone: az1,
     aggregates: [ssd], cell: cell1}
  - {count: 2, shape: standard, availability_zone: az2, cell: cell2}
  - {count: 1, shape: standard, availability_zone: az2, cell: cell2}
  - {count: 2, shape: metal}
"""

BASE: dict[str, Any] = {
    "shapes": {"s": {"vcpus": 4, "memory_mb": 1024}},
    "hosts": [{"shape": "s"}],
}


def with_change(path: str, value: Any) -> dict[str, Any]:
    """BASE with one value replaced: 'shapes.s.vcpus' or 'hosts.0.count'."""
    data = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


def test_the_documented_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(EXAMPLE)
    fleet = load_fleet(path)
    assert [h.name for h in fleet.hosts] == [
        "cmp0001", "cmp0002", "cmp0003", "standard-1", "standard-2", "standard-3",
        "metal-1", "metal-2"]
    assert fleet.cells == ["cell1", "cell2"]
    assert fleet.availability_zones == ["az1", "az2"]
    standard = fleet.shapes["standard"]
    assert isinstance(standard, LibvirtShape) and standard.numa_nodes == 2
    assert standard.allocation_ratios == {"VCPU": 4.0, "MEMORY_MB": 1.0}
    assert isinstance(fleet.shapes["metal"], IronicShape)
    cmp1 = fleet.host("cmp0001")
    assert cmp1.aggregate_names == ("ssd", "az1")
    assert cmp1.aggregate_uuids == (aggregate_uuid("ssd"), aggregate_uuid("az1"))
    assert fleet.host("metal-1").cell == "cell1" and fleet.host("metal-1").aggregates == ()


def test_the_module_docstring_example_is_a_valid_fleet(tmp_path: Path) -> None:
    doc = fleet_mod.__doc__ or ""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1]
    path = tmp_path / "doc.yaml"
    path.write_text("\n".join(line[4:] for line in block.splitlines()))
    assert len(load_fleet(path).hosts) == 102


def test_aggregates_list_members_and_zones() -> None:
    fleet = parse_fleet(__import__("yaml").safe_load(EXAMPLE))
    by_name = {a.name: a for a in fleet.aggregates()}
    assert set(by_name) == {"ssd", "az1", "az2"}
    assert by_name["az1"].availability_zone == "az1" and by_name["ssd"].availability_zone is None
    assert by_name["az2"].hosts == ("standard-1", "standard-2", "standard-3")
    assert by_name["ssd"].uuid == aggregate_uuid("ssd")


def test_hosts_get_their_drivers_with_their_aggregates() -> None:
    fleet = parse_fleet(__import__("yaml").safe_load(EXAMPLE))
    cmp1 = fleet.host("cmp0001").create_driver()
    assert isinstance(cmp1, LibvirtDriver)
    tree = cmp1.provider_tree("cmp0001")
    assert tree.root.aggregates == {aggregate_uuid("ssd"), aggregate_uuid("az1")}
    assert len(tree) == 4  # root, two NUMA cells, one NIC
    metal = fleet.host("metal-2").create_driver()
    assert isinstance(metal, IronicDriver) and len(metal.get_available_nodes()) == 4


def test_json_fleets_load_too(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(BASE))
    assert [h.name for h in load_fleet(path).hosts] == ["s-1"]


def test_explicit_start_and_patterns_without_n() -> None:
    data = copy.deepcopy(BASE)
    data["hosts"] = [{"shape": "s", "count": 2, "start": 10}, {"shape": "s", "name": "solo"}]
    assert [h.name for h in parse_fleet(data).hosts] == ["s-10", "s-11", "solo"]


def test_a_thousand_hosts_load_quickly() -> None:
    data = copy.deepcopy(BASE)
    data["hosts"] = [{"shape": "s", "count": 5000}]
    started = time.monotonic()
    fleet = parse_fleet(data)
    assert len(fleet.hosts) == 5000 and len({h.name for h in fleet.hosts}) == 5000
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("data,message", [
    ([], "expected a mapping"),
    ({"shapes": {}}, "missing hosts"),
    ({**BASE, "extra": 1}, "unknown key"),
    ({"shapes": {}, "hosts": [{"shape": "s"}]}, "at least one shape"),
    ({**BASE, "hosts": []}, "non-empty list"),
    (with_change("hosts.0.shape", "bigg"), "unknown shape 'bigg'"),
    (with_change("hosts.0", {"shape": "s", "cuont": 2}), "unknown key"),
    (with_change("hosts.0.count", 0), "hosts[0].count"),
    (with_change("hosts.0.count", "3"), "expected an integer"),
    (with_change("hosts.0", {"shape": "s", "count": 2, "name": "same"}), "used twice"),
    (with_change("hosts.0", {"shape": "s", "name": "{x}"}), "bad pattern"),
    (with_change("hosts.0", {"shape": "s", "name": "has space {n}"}), "not a host name"),
    (with_change("hosts.0", {"shape": "s", "availability_zone": "a:b"}), "cannot contain"),
    (with_change("hosts.0", {"shape": "s", "aggregates": "ssd"}), "list of strings"),
    (with_change("shapes.s", {"vcpu": 4, "memory_mb": 1}), "missing vcpus"),
    (with_change("shapes.s", {"vcpus": 4, "memory_mb": 1, "cpus": 2}), "unknown key"),
    (with_change("shapes.s.vcpus", 0), "shapes.s.vcpus"),
    (with_change("shapes.s.vcpus", True), "expected an integer"),
    (with_change("shapes.s", {"driver": "xen", "vcpus": 1}), "unknown driver 'xen'"),
    (with_change("shapes.s", {"vcpus": 4, "memory_mb": 64, "reserved": {"VCPU": 4}}),
     "below the total"),
    (with_change("shapes.s", {"vcpus": 4, "memory_mb": 64, "reserved": {"GPU": 1}}),
     "unknown class"),
    (with_change("shapes.s", {"vcpus": 4, "memory_mb": 64, "allocation_ratios": {"VCPU": 0}}),
     "ratio > 0"),
    (with_change("shapes.s", {"vcpus": 4, "memory_mb": 64, "allocation_ratios": {"VCPU": "x"}}),
     "expected a number"),
    (with_change("shapes.s", {"vcpus": 2, "memory_mb": 64, "numa_nodes": 3}), "numa_nodes"),
    (with_change("shapes.s", {"vcpus": 2, "memory_mb": 64, "traits": ["fast"]}),
     "neither a standard trait"),
    (with_change("shapes.s", {"vcpus": 2, "memory_mb": 64,
                              "network_devices": [{"name": "e", "physnet": "p",
                                                   "vnic_types": ["fancy"]}]}), "vnic_types"),
    (with_change("shapes.s", {"vcpus": 2, "memory_mb": 64,
                              "network_devices": [{"name": "e"}]}), "missing physnet"),
    (with_change("shapes.s", {"vcpus": 2, "memory_mb": 64, "network_devices": [
        {"name": "e", "physnet": "p"}, {"name": "e", "physnet": "q"}]}), "unique"),
    (with_change("shapes.s", {"driver": "ironic", "nodes": []}), "non-empty list"),
    (with_change("shapes.s", {"driver": "ironic", "nodes": [{"count": 1}]}),
     "missing resource_class"),
    (with_change("shapes.s", {"driver": "ironic", "nodes": [{"resource_class": "x"}],
                              "vcpus": 2}), "unknown key"),
])
def test_mistakes_are_named_where_they_are(data: Any, message: str) -> None:
    with pytest.raises(FleetError) as info:
        parse_fleet(data, "f.yaml")
    assert message in str(info.value)
    assert str(info.value).startswith("f.yaml")


def test_unreadable_and_unparsable_files(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="cannot read"):
        load_fleet(tmp_path / "missing.yaml")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("shapes: [unclosed")
    with pytest.raises(FleetError, match="not valid YAML"):
        load_fleet(bad_yaml)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{'single': 'quotes'}")
    with pytest.raises(FleetError, match="not valid JSON"):
        load_fleet(bad_json)
