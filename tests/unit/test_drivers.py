"""Simulated drivers: the provider trees they describe and the books they keep."""

from __future__ import annotations

import pytest

from stratus.compute.drivers import IronicDriver, LibvirtDriver, create_driver
from stratus.compute.drivers import errors as e
from stratus.compute.drivers.base import Instance
from stratus.compute.provider_tree import Provider, ProviderTree, stable_uuid
from stratus.compute.shapes import (
    LIBVIRT_IMAGE_TYPES,
    BaremetalNodes,
    IronicShape,
    LibvirtShape,
    NetworkDevice,
)
from stratus.placement.model import Inventory

FLAT = LibvirtShape("flat", vcpus=8, memory_mb=16384, disk_gb=100,
                    reserved={"MEMORY_MB": 512}, allocation_ratios={"VCPU": 4.0, "DISK_GB": 1.5},
                    traits=frozenset({"HW_CPU_X86_AVX2"}))
NUMA = LibvirtShape("numa", vcpus=7, memory_mb=8193, disk_gb=50, reserved={"VCPU": 1},
                    numa_nodes=2, network_devices=(
                        NetworkDevice("ens1", "physnet1", ("normal", "direct"), 10_000, 20_000),
                        NetworkDevice("ens2", "phys-2", ("direct",), egress_kbps=5_000)))
METAL = IronicShape("metal", (BaremetalNodes(2, "baremetal-gold", frozenset({"CUSTOM_RAID"})),
                              BaremetalNodes(1, "CUSTOM_BAREMETAL_SILVER")))


def alloc(**by_provider: dict[str, int]) -> dict[str, dict[str, dict[str, int]]]:
    return {rp: {"resources": res} for rp, res in by_provider.items()}


# -- libvirt trees --------------------------------------------------------------


def test_a_flat_host_is_one_provider_with_the_shape_inventory() -> None:
    driver = LibvirtDriver("cmp1", FLAT, aggregates=["agg-1"])
    assert driver.get_available_nodes() == ["cmp1"]
    tree = driver.provider_tree("cmp1")
    assert len(tree) == 1
    root = tree.root
    assert root.name == "cmp1" and root.parent_uuid is None
    assert root.inventory_body() == {
        "DISK_GB": {"total": 100, "reserved": 0, "min_unit": 1, "max_unit": 100,
                    "step_size": 1, "allocation_ratio": 1.5},
        "MEMORY_MB": {"total": 16384, "reserved": 512, "min_unit": 1, "max_unit": 16384,
                      "step_size": 1, "allocation_ratio": 1.0},
        "VCPU": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
                 "allocation_ratio": 4.0},
    }
    # The shape's traits, its architecture, and the image types libvirt boots from.
    assert root.traits == {"COMPUTE_NODE", "HW_CPU_X86_AVX2", "HW_ARCH_X86_64",
                           *LIBVIRT_IMAGE_TYPES}
    assert root.aggregates == {"agg-1"}
    assert root.capacity("VCPU") == 32 and root.capacity("MEMORY_MB") == 15872


def test_provider_uuids_survive_a_restart_and_differ_between_hosts() -> None:
    first = LibvirtDriver("cmp1", NUMA).provider_tree("cmp1")
    again = LibvirtDriver("cmp1", NUMA).provider_tree("cmp1")
    other = LibvirtDriver("cmp2", NUMA).provider_tree("cmp2")
    assert [p.uuid for p in first] == [p.uuid for p in again]
    assert not {p.uuid for p in first} & {p.uuid for p in other}


def test_numa_cells_split_vcpu_and_memory_and_the_root_keeps_disk() -> None:
    tree = LibvirtDriver("cmp1", NUMA).provider_tree("cmp1")
    root = tree.root
    assert set(root.inventories) == {"DISK_GB"}
    cells = [p for p in tree.children(root.uuid) if "HW_NUMA_ROOT" in p.traits]
    assert [c.name for c in cells] == ["cmp1_NUMA0", "cmp1_NUMA1"]
    assert [c.inventories["VCPU"].total for c in cells] == [4, 3]
    assert [c.inventories["VCPU"].reserved for c in cells] == [1, 0]
    assert [c.inventories["MEMORY_MB"].total for c in cells] == [4097, 4096]
    assert [c.inventories["VCPU"].max_unit for c in cells] == [4, 3]
    assert tree.total("VCPU") == 7 and tree.total("MEMORY_MB") == 8193


def test_network_devices_are_bandwidth_children_with_physnet_and_vnic_traits() -> None:
    tree = LibvirtDriver("cmp1", NUMA).provider_tree("cmp1")
    ens1, ens2 = tree.by_name("cmp1:ens1"), tree.by_name("cmp1:ens2")
    assert ens1.parent_uuid == ens2.parent_uuid == tree.root.uuid
    assert {rc: inv.total for rc, inv in ens1.inventories.items()} == {
        "NET_BW_EGR_KILOBIT_PER_SEC": 10_000, "NET_BW_IGR_KILOBIT_PER_SEC": 20_000}
    assert ens1.traits == {"CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL",
                           "CUSTOM_VNIC_TYPE_DIRECT"}
    assert set(ens2.inventories) == {"NET_BW_EGR_KILOBIT_PER_SEC"}  # no ingress inventory
    assert ens2.traits == {"CUSTOM_PHYSNET_PHYS_2", "CUSTOM_VNIC_TYPE_DIRECT"}


def test_a_diskless_host_reports_no_disk() -> None:
    shape = LibvirtShape("diskless", vcpus=2, memory_mb=1024)
    assert set(LibvirtDriver("h", shape).provider_tree("h").root.inventories) == {
        "VCPU", "MEMORY_MB"}


def test_trees_round_trip_through_plain_data() -> None:
    tree = LibvirtDriver("cmp1", NUMA, aggregates=["a"]).provider_tree("cmp1")
    assert ProviderTree.from_dict(tree.as_dict()) == tree


def test_a_tree_must_be_rooted_and_ordered() -> None:
    root = Provider("r", stable_uuid("r"))
    child = Provider("c", stable_uuid("c"), parent_uuid=root.uuid)
    ProviderTree([root, child])
    with pytest.raises(ValueError):
        ProviderTree([])
    with pytest.raises(ValueError, match="parent"):
        ProviderTree([child, root])
    with pytest.raises(ValueError, match="twice"):
        ProviderTree([root, child, child])
    with pytest.raises(ValueError, match="before"):
        ProviderTree([root, Provider("x", stable_uuid("x"), parent_uuid=stable_uuid("nope"))])


# -- bookkeeping ------------------------------------------------------------------


def test_spawn_and_destroy_keep_exact_usage() -> None:
    driver = LibvirtDriver("cmp1", FLAT)
    root = driver.provider_tree("cmp1").root.uuid
    node = driver.spawn(Instance("i1", "web-1"), alloc(**{root: {"VCPU": 2, "MEMORY_MB": 1024}}))
    driver.spawn(Instance("i2"), {root: {"VCPU": 1, "DISK_GB": 10}})  # the flat form works too
    assert node == "cmp1"
    assert driver.usage("cmp1") == {root: {"VCPU": 3, "MEMORY_MB": 1024, "DISK_GB": 10}}
    assert driver.free("cmp1")[root] == {"VCPU": 29, "MEMORY_MB": 14848, "DISK_GB": 140}
    assert [p.instance.uuid for p in driver.instances("cmp1")] == ["i1", "i2"]
    driver.destroy(Instance("i1"))
    driver.destroy("i2")
    assert driver.usage("cmp1") == {}
    assert driver.instances() == []


def test_overcommit_stops_exactly_at_capacity() -> None:
    driver = LibvirtDriver("cmp1", FLAT)
    root = driver.provider_tree("cmp1").root.uuid
    for i in range(32):  # 8 VCPU at ratio 4.0
        driver.spawn(Instance(f"i{i}"), {root: {"VCPU": 1}})
    with pytest.raises(e.InsufficientCapacity) as info:
        driver.spawn(Instance("one-too-many"), {root: {"VCPU": 1}})
    assert (info.value.provider, info.value.resource_class, info.value.requested,
            info.value.free) == ("cmp1", "VCPU", 1, 0)
    with pytest.raises(e.InsufficientCapacity):  # reserved memory is not for instances
        driver.spawn(Instance("big"), {root: {"MEMORY_MB": 15873}})


def test_a_refused_spawn_changes_nothing() -> None:
    driver = LibvirtDriver("cmp1", NUMA)
    tree = driver.provider_tree("cmp1")
    numa0, root = tree.by_name("cmp1_NUMA0").uuid, tree.root.uuid
    with pytest.raises(e.InsufficientCapacity):  # the VCPU fits, the disk does not
        driver.spawn(Instance("i1"), {numa0: {"VCPU": 1}, root: {"DISK_GB": 51}})
    assert driver.usage("cmp1") == {}
    assert driver.instances() == []
    driver.spawn(Instance("i1"), {numa0: {"VCPU": 3}, root: {"DISK_GB": 50}})
    assert driver.usage("cmp1") == {numa0: {"VCPU": 3}, root: {"DISK_GB": 50}}


def test_allocations_that_are_not_a_place_on_this_host_are_refused() -> None:
    driver = LibvirtDriver("cmp1", NUMA)
    tree = driver.provider_tree("cmp1")
    root, ens1 = tree.root.uuid, tree.by_name("cmp1:ens1").uuid
    with pytest.raises(e.InvalidAllocation, match="no allocation"):
        driver.spawn(Instance("i"), {stable_uuid("elsewhere"): {"VCPU": 1}})
    with pytest.raises(e.InvalidAllocation, match="has no VCPU"):
        driver.spawn(Instance("i"), {root: {"VCPU": 1}})  # VCPU lives on the NUMA cells
    with pytest.raises(e.InvalidAllocation, match="non-negative integer"):
        driver.spawn(Instance("i"), {root: {"DISK_GB": -1}})
    with pytest.raises(e.InvalidAllocation, match="non-negative integer"):
        driver.spawn(Instance("i"), {root: {"DISK_GB": 1.5}})
    with pytest.raises(e.InvalidAllocation, match="meant for node"):
        driver.spawn(Instance("i", node="cmp9"), {root: {"DISK_GB": 1}})
    # a sharing provider's part is someone else's books; bandwidth is this host's
    driver.spawn(Instance("i"), {root: {"DISK_GB": 1}, ens1: {"NET_BW_EGR_KILOBIT_PER_SEC": 100},
                                 stable_uuid("shared-pool"): {"DISK_GB": 500}})
    assert stable_uuid("shared-pool") not in driver.instance("i").resources
    assert driver.usage("cmp1")[ens1] == {"NET_BW_EGR_KILOBIT_PER_SEC": 100}


def test_instances_are_unique_and_must_exist_to_be_destroyed() -> None:
    driver = LibvirtDriver("cmp1", FLAT)
    root = driver.provider_tree("cmp1").root.uuid
    driver.spawn(Instance("i1"), {root: {"VCPU": 1}})
    with pytest.raises(e.InstanceExists):
        driver.spawn(Instance("i1"), {root: {"VCPU": 1}})
    with pytest.raises(e.InstanceNotFound):
        driver.destroy("nope")
    with pytest.raises(e.InstanceNotFound):
        driver.instance("nope")
    with pytest.raises(e.NodeNotFound):
        driver.provider_tree("cmp2")
    with pytest.raises(e.NodeNotFound):
        driver.usage("cmp2")


# -- ironic -------------------------------------------------------------------------


def test_ironic_manages_one_provider_per_node() -> None:
    driver = IronicDriver("ironic1", METAL, aggregates=["agg"])
    nodes = driver.get_available_nodes()
    assert nodes == ["ironic1-node-0", "ironic1-node-1", "ironic1-node-2"]
    trees = [driver.provider_tree(n) for n in nodes]
    assert all(len(t) == 1 for t in trees)
    gold = trees[0].root
    assert gold.inventories == {"CUSTOM_BAREMETAL_GOLD": Inventory(
        "CUSTOM_BAREMETAL_GOLD", total=1, reserved=0, min_unit=1, max_unit=1)}
    assert gold.traits == {"COMPUTE_NODE", "CUSTOM_RAID"} and gold.aggregates == {"agg"}
    assert set(trees[2].root.inventories) == {"CUSTOM_BAREMETAL_SILVER"}
    assert len({t.root.uuid for t in trees}) == 3


def test_an_ironic_node_holds_one_instance_and_allocations_stay_on_one_node() -> None:
    driver = IronicDriver("ironic1", METAL)
    n0, n1 = (driver.provider_tree(n).root.uuid for n in ("ironic1-node-0", "ironic1-node-1"))
    assert driver.spawn(Instance("a"), {n0: {"CUSTOM_BAREMETAL_GOLD": 1}}) == "ironic1-node-0"
    with pytest.raises(e.SpawnFailed, match="already runs a"):
        driver.spawn(Instance("b"), {n0: {"CUSTOM_BAREMETAL_GOLD": 1}})
    with pytest.raises(e.InvalidAllocation, match="span nodes"):
        driver.spawn(Instance("b"), {n0: {"CUSTOM_BAREMETAL_GOLD": 1},
                                     n1: {"CUSTOM_BAREMETAL_GOLD": 1}})
    assert driver.spawn(Instance("b"), {n1: {"CUSTOM_BAREMETAL_GOLD": 1}}) == "ironic1-node-1"
    assert [p.instance.uuid for p in driver.instances("ironic1-node-1")] == ["b"]
    driver.destroy("a")
    driver.spawn(Instance("c"), {n0: {"CUSTOM_BAREMETAL_GOLD": 1}})


def test_maintenance_reserves_the_node_and_refuses_spawns() -> None:
    driver = IronicDriver("ironic1", METAL)
    node = "ironic1-node-0"
    rp = driver.provider_tree(node).root.uuid
    driver.set_maintenance(node, True)
    assert driver.in_maintenance(node)
    assert driver.provider_tree(node).root.inventories["CUSTOM_BAREMETAL_GOLD"].reserved == 1
    with pytest.raises(e.SpawnFailed, match="maintenance"):
        driver.spawn(Instance("a"), {rp: {"CUSTOM_BAREMETAL_GOLD": 1}})
    driver.set_maintenance(node, False)
    assert driver.provider_tree(node).root.uuid == rp
    driver.spawn(Instance("a"), {rp: {"CUSTOM_BAREMETAL_GOLD": 1}})


def test_the_registry_builds_the_driver_a_shape_names() -> None:
    assert isinstance(create_driver("h1", FLAT), LibvirtDriver)
    assert isinstance(create_driver("h2", METAL), IronicDriver)


# -- moves ------------------------------------------------------------------------


def test_a_resize_keeps_the_source_copy_counted_until_confirmed_or_reverted() -> None:
    driver = LibvirtDriver("cmp1", FLAT)
    root = driver.provider_tree("cmp1").root.uuid
    driver.spawn(Instance("vm"), alloc(**{root: {"VCPU": 2, "MEMORY_MB": 1024}}))
    driver.begin_migration("vm")
    assert driver.instances() == [] and [p.instance.uuid for p in driver.outgoing()] == ["vm"]
    # Resized on the same host: both copies count, as Placement counts them.
    driver.spawn(Instance("vm"), alloc(**{root: {"VCPU": 4, "MEMORY_MB": 2048}}))
    assert driver.usage("cmp1") == {root: {"VCPU": 6, "MEMORY_MB": 3072}}
    with pytest.raises(e.InstanceExists):
        driver.revert_migration("vm")          # the resized copy must go first
    driver.confirm_migration("vm")
    assert driver.usage("cmp1") == {root: {"VCPU": 4, "MEMORY_MB": 2048}}
    assert driver.outgoing() == []
    with pytest.raises(e.InstanceNotFound):
        driver.confirm_migration("vm")


def test_reverting_a_move_runs_the_source_copy_again() -> None:
    driver = LibvirtDriver("cmp1", FLAT)
    root = driver.provider_tree("cmp1").root.uuid
    driver.spawn(Instance("vm"), alloc(**{root: {"VCPU": 2}}))
    driver.begin_migration("vm")
    driver.revert_migration("vm")
    assert [p.instance.uuid for p in driver.instances()] == ["vm"]
    assert driver.usage("cmp1") == {root: {"VCPU": 2}} and driver.outgoing() == []
    with pytest.raises(e.InstanceNotFound):
        driver.begin_migration("absent")


def test_a_restarted_service_adopts_what_runs_here_once_and_only_that() -> None:
    driver = IronicDriver("ironic1", METAL)
    n0, n1 = (driver.provider_tree(n).root.uuid for n in ("ironic1-node-0", "ironic1-node-1"))
    assert not driver.adopt(Instance("away"), alloc(**{stable_uuid("elsewhere"): {"VCPU": 1}}))
    assert not driver.adopt(Instance("split"), alloc(**{n0: {"CUSTOM_BAREMETAL_GOLD": 1},
                                                        n1: {"CUSTOM_BAREMETAL_GOLD": 1}}))
    assert driver.adopt(Instance("vm"), alloc(**{n0: {"CUSTOM_BAREMETAL_GOLD": 1}}))
    assert not driver.adopt(Instance("vm"), alloc(**{n0: {"CUSTOM_BAREMETAL_GOLD": 1}}))
    assert [p.instance.uuid for p in driver.instances("ironic1-node-0")] == ["vm"]
    assert driver.usage("ironic1-node-0") == {n0: {"CUSTOM_BAREMETAL_GOLD": 1}}
    # The copy a resize left here comes back as outgoing, not as a running instance.
    assert driver.adopt(Instance("moved"), alloc(**{n1: {"CUSTOM_BAREMETAL_GOLD": 1}}),
                        outgoing=True)
    assert [p.instance.uuid for p in driver.outgoing()] == ["moved"]
    assert driver.instances("ironic1-node-1") == []
