"""Deterministic random Placement worlds (and, via ``tools.queries``, queries against them).

A world is plain data: providers (parents before children) with inventories,
traits and aggregates, plus consumers holding allocations. The same seed always
gives the same world, uuids included, so a mismatch found by the differential
test can be replayed from its seed alone.

Shapes mixed into a differential world:
- flat compute hosts (VCPU, MEMORY_MB, maybe DISK_GB on the root);
- NUMA trees: a root plus NUMA children carrying VCPU/MEMORY_MB (sometimes PCPU
  or a custom class), trait HW_NUMA_ROOT;
- SR-IOV-style network devices: an agent provider (no inventory) under the root
  or under a NUMA node, with device children carrying NET_BW_EGR/IGR inventory
  and CUSTOM_PHYSNET_* / CUSTOM_VNIC_TYPE_* traits;
- sharing providers (DISK_GB or IPV4_ADDRESS + MISC_SHARES_VIA_AGGREGATE) tied
  to hosts through aggregates;
- edge cases: reserved == total, fractional and sub-1 allocation ratios,
  min_unit / max_unit / step_size that rule amounts out, providers without inventory;
- partial usage through consumers' allocations (always within capacity and units).

``perfload_world`` builds the large, regular worlds of the benchmark.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

PHYSNETS = ["CUSTOM_PHYSNET_PUBLIC", "CUSTOM_PHYSNET_PRIVATE", "CUSTOM_PHYSNET_STORAGE"]
VNIC_TYPES = ["CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP"]
HOST_TRAITS = ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "STORAGE_DISK_SSD", "CUSTOM_GOLD",
               "COMPUTE_STATUS_DISABLED"]
CUSTOM_TRAITS = [*PHYSNETS, *VNIC_TYPES, "CUSTOM_GOLD", "CUSTOM_RAID"]
CUSTOM_CLASSES = ["CUSTOM_FPGA"]
BW_EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
BW_IGR = "NET_BW_IGR_KILOBIT_PER_SEC"


def make_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def inventory(total: int, reserved: int = 0, min_unit: int = 1, max_unit: int | None = None,
              step_size: int = 1, allocation_ratio: float = 1.0) -> dict:
    return {"total": total, "reserved": reserved, "min_unit": min_unit,
            "max_unit": total if max_unit is None else max_unit,
            "step_size": step_size, "allocation_ratio": allocation_ratio}


def capacity(inv: dict) -> int:
    """What Placement offers: ``int((total - reserved) * allocation_ratio)``."""
    return int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])


@dataclass
class Provider:
    uuid: str
    name: str
    parent: str | None
    kind: str  # compute | numa | agent | netdev | shared | bare
    inventories: dict[str, dict] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)


@dataclass
class Consumer:
    uuid: str
    project_id: str
    user_id: str
    allocations: dict[str, dict[str, int]]  # provider uuid -> class -> amount


@dataclass
class World:
    seed: int | str
    providers: list[Provider]  # parents always before their children
    consumers: list[Consumer] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)
    custom_traits: list[str] = field(default_factory=list)
    custom_classes: list[str] = field(default_factory=list)

    def by_uuid(self) -> dict[str, Provider]:
        return {p.uuid: p for p in self.providers}

    def roots(self) -> list[Provider]:
        return [p for p in self.providers if p.parent is None]

    def usage(self) -> dict[tuple[str, str], int]:
        used: Counter[tuple[str, str]] = Counter()
        for consumer in self.consumers:
            for rp, resources in consumer.allocations.items():
                for rc, amount in resources.items():
                    used[(rp, rc)] += amount
        return used

    def resource_classes(self) -> list[str]:
        return sorted({rc for p in self.providers for rc in p.inventories})

    def traits(self) -> list[str]:
        return sorted({t for p in self.providers for t in p.traits})

    def summary(self) -> str:
        kinds = Counter(p.kind for p in self.providers)
        shape = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        return (f"world seed={self.seed}: {len(self.providers)} providers ({shape}) in "
                f"{len(self.roots())} trees, {len(self.aggregates)} aggregates, "
                f"{len(self.consumers)} consumers")

    def describe(self) -> str:
        """Every provider, one line each, indented by depth: for mismatch reports."""
        children: dict[str | None, list[Provider]] = defaultdict(list)
        for p in self.providers:
            children[p.parent].append(p)
        used = self.usage()
        lines: list[str] = []

        def walk(p: Provider, depth: int) -> None:
            invs = ", ".join(
                f"{rc}={inv['total']}(r{inv['reserved']} x{inv['allocation_ratio']} "
                f"u{inv['min_unit']}-{inv['max_unit']}/{inv['step_size']} used "
                f"{used.get((p.uuid, rc), 0)})" for rc, inv in sorted(p.inventories.items()))
            aggs = ",".join(a[:8] for a in p.aggregates)
            lines.append(f"{'  ' * depth}{p.name} {p.uuid} [{invs}] traits={sorted(p.traits)} "
                         f"aggs=[{aggs}]")
            for child in children[p.uuid]:
                walk(child, depth + 1)

        for root in children[None]:
            walk(root, 0)
        return "\n".join(lines)


class _Builder:
    def __init__(self, seed: int | str) -> None:
        self.rng = random.Random(f"world/{seed}")
        self.world = World(seed=seed, providers=[], custom_traits=list(CUSTOM_TRAITS),
                           custom_classes=list(CUSTOM_CLASSES))

    def provider(self, name: str, kind: str, parent: Provider | None = None) -> Provider:
        p = Provider(uuid=make_uuid(self.rng), name=name, kind=kind,
                     parent=parent.uuid if parent else None)
        self.world.providers.append(p)
        return p

    def edgy(self, total: int, ratio_choices: list[float], unit_edges: bool = True) -> dict:
        """An inventory with, now and then, one of the edge cases Placement must get right."""
        rng = self.rng
        inv = inventory(total, allocation_ratio=rng.choice(ratio_choices))
        roll = rng.random()
        if roll < 0.05:
            inv["reserved"] = total  # nothing left (allowed from microversion 1.26)
        elif roll < 0.25:
            inv["reserved"] = rng.randint(1, max(1, total // 4))
        if unit_edges and rng.random() < 0.2:
            inv["max_unit"] = max(1, total // rng.choice([2, 4]))
        if unit_edges and rng.random() < 0.1:
            inv["min_unit"] = min(inv["max_unit"], rng.choice([2, 4]))
        if unit_edges and rng.random() < 0.1:
            inv["step_size"] = rng.choice([2, 5])
            inv["min_unit"] = inv["step_size"]
            inv["max_unit"] = max(inv["step_size"],
                                  inv["max_unit"] - inv["max_unit"] % inv["step_size"])
        return inv

    def host_traits(self) -> list[str]:
        traits = [t for t in HOST_TRAITS[:4] if self.rng.random() < 0.4]
        if self.rng.random() < 0.08:
            traits.append("COMPUTE_STATUS_DISABLED")
        return traits

    def compute_root(self, i: int, local_disk: bool) -> Provider:
        rng = self.rng
        root = self.provider(f"host{i}", "compute")
        root.traits = self.host_traits()
        if local_disk:
            root.inventories["DISK_GB"] = self.edgy(rng.choice([100, 500, 1000]), [1.0, 1.0, 1.5])
        return root

    def flat_host(self, i: int, local_disk: bool) -> None:
        rng = self.rng
        root = self.compute_root(i, local_disk)
        root.inventories["VCPU"] = self.edgy(rng.choice([4, 8, 16, 32]), [1.0, 4.0, 16.0, 0.5])
        root.inventories["MEMORY_MB"] = self.edgy(rng.choice([2048, 8192, 16384]), [1.0, 1.5])

    def numa_host(self, i: int, local_disk: bool, nics: bool) -> None:
        rng = self.rng
        root = self.compute_root(i, local_disk)
        numas = []
        for n in range(rng.randint(1, 3)):
            numa = self.provider(f"host{i}-numa{n}", "numa", root)
            numa.traits = ["HW_NUMA_ROOT"] + (["CUSTOM_GOLD"] if rng.random() < 0.2 else [])
            numa.inventories["VCPU"] = self.edgy(rng.choice([2, 4, 8]), [1.0, 2.0, 16.0])
            numa.inventories["MEMORY_MB"] = self.edgy(rng.choice([1024, 4096, 8192]), [1.0, 1.5])
            if rng.random() < 0.3:
                numa.inventories["PCPU"] = self.edgy(rng.choice([2, 4]), [1.0], unit_edges=False)
            if rng.random() < 0.2:
                numa.inventories["CUSTOM_FPGA"] = self.edgy(rng.choice([1, 2]), [1.0], False)
            numas.append(numa)
        if not nics:
            return
        for a in range(rng.randint(1, 2)):
            parent = root if rng.random() < 0.6 else rng.choice(numas)
            agent = self.provider(f"host{i}-agent{a}", "agent", parent)
            vnic = rng.sample(VNIC_TYPES, rng.randint(1, 2))
            agent.traits = list(vnic)
            for d in range(rng.randint(1, 2)):
                dev = self.provider(f"host{i}-agent{a}-dev{d}", "netdev", agent)
                dev.traits = [rng.choice(PHYSNETS), *vnic]
                bw = rng.choice([10000, 1000000, 10000000])
                dev.inventories[BW_EGR] = self.edgy(bw, [1.0], unit_edges=False)
                dev.inventories[BW_IGR] = self.edgy(bw, [1.0], unit_edges=False)

    def sharing(self, j: int, aggregates: list[str]) -> Provider:
        rng = self.rng
        share = self.provider(f"share{j}", "shared")
        share.traits = ["MISC_SHARES_VIA_AGGREGATE"]
        if rng.random() < 0.75:
            share.inventories["DISK_GB"] = self.edgy(rng.choice([1000, 2000, 10000]), [1.0])
            if rng.random() < 0.4:
                share.traits.append("STORAGE_DISK_SSD")
        else:
            share.inventories["IPV4_ADDRESS"] = inventory(rng.choice([4, 16]))
        # Now and then a sharing provider shares with nobody (no aggregate).
        if rng.random() < 0.85:
            share.aggregates = rng.sample(aggregates, rng.randint(1, min(2, len(aggregates))))
        return share

    def consume(self, fraction: float) -> None:
        """Consumers taking legal amounts, so the world has partial usage."""
        rng = self.rng
        used = Counter[tuple[str, str]]()
        for p in self.world.providers:
            for rc, inv in sorted(p.inventories.items()):
                if rng.random() >= fraction:
                    continue
                free = capacity(inv) - used[(p.uuid, rc)]
                amount = _legal_amount(rng, inv, free)
                if amount is None:
                    continue
                used[(p.uuid, rc)] += amount
                self.world.consumers.append(Consumer(
                    uuid=make_uuid(rng), project_id=rng.choice(["proj-a", "proj-b"]),
                    user_id=rng.choice(["user-a", "user-b"]),
                    allocations={p.uuid: {rc: amount}}))
        # Some consumers hold resources on several providers (an instance's VCPU on
        # a NUMA node and its disk on shared storage, say): merge a few pairs.
        merged: list[Consumer] = []
        for consumer in self.world.consumers:
            if merged and rng.random() < 0.3 and not (
                    merged[-1].allocations.keys() & consumer.allocations.keys()):
                merged[-1].allocations.update(consumer.allocations)
            else:
                merged.append(consumer)
        self.world.consumers = merged


def _legal_amount(rng: random.Random, inv: dict, free: int) -> int | None:
    top = min(inv["max_unit"], free)
    step = inv["step_size"]
    low = max(inv["min_unit"], step)
    low += (-low) % step
    if top < low:
        return None
    count = (top - low) // step + 1
    # Mostly small, sometimes everything that is left.
    index = count - 1 if rng.random() < 0.08 else rng.randrange(max(1, count // 3))
    return low + index * step


def generate_world(seed: int | str, max_hosts: int = 8) -> World:
    """A small mixed world for the differential test (a few dozen providers)."""
    b = _Builder(seed)
    rng = b.rng
    n_aggs = rng.randint(1, 3)
    b.world.aggregates = [make_uuid(rng) for _ in range(n_aggs)]
    n_shares = rng.choice([0, 1, 1, 2])
    hosts = rng.randint(3, max_hosts)
    for i in range(hosts):
        local_disk = n_shares == 0 or rng.random() < 0.5
        shape = rng.random()
        if shape < 0.4:
            b.flat_host(i, local_disk)
        else:
            b.numa_host(i, local_disk, nics=shape > 0.65)
    if rng.random() < 0.2:
        bare = b.provider("bare", "bare")
        bare.traits = ["CUSTOM_RAID"]
    for j in range(n_shares):
        b.sharing(j, b.world.aggregates)
    for root in b.world.roots():
        if root.kind in ("compute", "bare") and rng.random() < 0.6:
            root.aggregates = rng.sample(b.world.aggregates, rng.randint(1, n_aggs))
    b.consume(fraction=rng.choice([0.0, 0.2, 0.4]))
    return b.world


def perfload_world(n_providers: int, seed: int | str = 0, nested_fraction: float = 0.1) -> World:
    """A large regular world for the benchmark, shaped like Placement's perfload.

    Flat hosts carry VCPU/MEMORY_MB/DISK_GB, the trait HW_CPU_X86_AVX2 and the
    aggregate ``aggregates[0]`` (as perfload's providers do). A ``nested_fraction``
    of the providers belong to NUMA trees (root + 2 NUMA nodes + one agent with two
    network devices, 6 providers per tree) for the nested query. ``n_providers``
    counts every provider.
    """
    rng = random.Random(f"perfload/{seed}")
    world = World(seed=f"perfload/{seed}/{n_providers}", providers=[],
                  custom_traits=list(CUSTOM_TRAITS), custom_classes=list(CUSTOM_CLASSES))
    agg = make_uuid(rng)
    world.aggregates = [agg]
    n_trees = int(n_providers * nested_fraction) // 6
    n_flat = n_providers - 6 * n_trees

    def new(name: str, kind: str, parent: Provider | None = None) -> Provider:
        p = Provider(uuid=make_uuid(rng), name=name, kind=kind,
                     parent=parent.uuid if parent else None)
        world.providers.append(p)
        return p

    for i in range(n_flat):
        p = new(f"cn{i}", "compute")
        p.inventories = {"VCPU": inventory(32, allocation_ratio=16.0),
                         "MEMORY_MB": inventory(131072, reserved=512, allocation_ratio=1.5),
                         "DISK_GB": inventory(2048, reserved=10)}
        p.traits = ["HW_CPU_X86_AVX2", "STORAGE_DISK_SSD"]
        p.aggregates = [agg]
    for t in range(n_trees):
        root = new(f"nested{t}", "compute")
        root.traits = ["HW_CPU_X86_AVX2"]
        root.inventories = {"DISK_GB": inventory(2048)}
        for n in range(2):
            numa = new(f"nested{t}-numa{n}", "numa", root)
            numa.traits = ["HW_NUMA_ROOT"]
            numa.inventories = {"VCPU": inventory(16, allocation_ratio=4.0),
                                "MEMORY_MB": inventory(65536)}
        agent = new(f"nested{t}-agent", "agent", root)
        agent.traits = ["CUSTOM_VNIC_TYPE_DIRECT"]
        for d in range(2):
            dev = new(f"nested{t}-dev{d}", "netdev", agent)
            dev.traits = [PHYSNETS[d % 2], "CUSTOM_VNIC_TYPE_DIRECT"]
            dev.inventories = {BW_EGR: inventory(10000000), BW_IGR: inventory(10000000)}
    return world
