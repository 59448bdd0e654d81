"""Property tests: whatever sequence of spawns and destroys, the books balance.

A model kept here, independently of the driver, says whether each spawn must
fit; the driver must agree, and its usage must always equal the sum of what
live instances hold, never above capacity.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from stratus.compute.drivers import LibvirtDriver
from stratus.compute.drivers import errors as e
from stratus.compute.drivers.base import Instance
from stratus.compute.shapes import LibvirtShape, NetworkDevice

SHAPE = LibvirtShape(
    "prop", vcpus=6, memory_mb=4000, disk_gb=30, reserved={"MEMORY_MB": 100, "VCPU": 1},
    allocation_ratios={"VCPU": 2.0, "MEMORY_MB": 1.5}, numa_nodes=2,
    network_devices=(NetworkDevice("nic", "net", egress_kbps=1000, ingress_kbps=1000),))


class Books(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.driver = LibvirtDriver("h", SHAPE)
        self.tree = self.driver.provider_tree("h")
        self.capacity = {(p.uuid, rc): inv.capacity
                         for p in self.tree for rc, inv in p.inventories.items()}
        self.live: dict[str, dict[str, dict[str, int]]] = {}
        self.counter = 0

    def model_usage(self) -> Counter[tuple[str, str]]:
        used: Counter[tuple[str, str]] = Counter()
        for resources in self.live.values():
            for rp, amounts in resources.items():
                for rc, amount in amounts.items():
                    used[(rp, rc)] += amount
        return used

    @rule(data=st.data())
    def spawn(self, data: st.DataObject) -> None:
        keys = sorted(self.capacity)
        chosen = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4, unique=True))
        resources: dict[str, dict[str, int]] = {}
        for rp, rc in chosen:
            # Up to half of capacity: a few instances fill a provider, then spawns are refused.
            most = max(1, self.capacity[(rp, rc)] // 2)
            resources.setdefault(rp, {})[rc] = data.draw(st.integers(1, most), label=rc)
        used = self.model_usage()
        fits = all(used[(rp, rc)] + n <= self.capacity[(rp, rc)]
                   for rp, amounts in resources.items() for rc, n in amounts.items())
        self.counter += 1
        uuid = f"i{self.counter}"
        try:
            self.driver.spawn(Instance(uuid), {rp: {"resources": r} for rp, r in resources.items()})
        except e.InsufficientCapacity:
            assert not fits
        else:
            assert fits
            self.live[uuid] = resources

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def destroy(self, data: st.DataObject) -> None:
        uuid = data.draw(st.sampled_from(sorted(self.live)))
        self.driver.destroy(uuid)
        del self.live[uuid]

    @invariant()
    def usage_is_the_sum_of_live_instances_and_within_capacity(self) -> None:
        usage = self.driver.usage("h")
        flat = {(rp, rc): n for rp, amounts in usage.items() for rc, n in amounts.items()}
        assert flat == {k: v for k, v in self.model_usage().items() if v}
        free = self.driver.free("h")
        for (rp, rc), cap in self.capacity.items():
            assert 0 <= free[rp][rc] == cap - flat.get((rp, rc), 0)

    def teardown(self) -> None:
        for uuid in list(self.live):
            self.driver.destroy(uuid)
        assert self.driver.usage("h") == {}


TestBooks = Books.TestCase
TestBooks.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
