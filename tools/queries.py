"""Random ``GET /allocation_candidates`` queries against a world, microversions 1.10-1.39.

Each query is a pure function of (world, seed, index), so one case of the
differential test can be replayed alone. Most queries are valid for their
microversion and are built from what the world holds (its classes, traits,
aggregates and providers) so that answers are usually non-empty; a few
"stretch" queries deliberately step outside the rules (a feature above the
version, an unknown trait or class, a missing group_policy...) to compare
error handling too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from urllib.parse import urlencode

from tools.worlds import BW_EGR, BW_IGR, PHYSNETS, VNIC_TYPES, World, make_uuid

# Small amounts most of the time, now and then one that little or nothing can hold.
AMOUNTS = {
    "VCPU": [1, 1, 1, 2, 2, 4], "PCPU": [1, 2], "MEMORY_MB": [256, 256, 512, 1024, 2048],
    "DISK_GB": [1, 10, 10, 20, 100], "IPV4_ADDRESS": [1, 2], "CUSTOM_FPGA": [1, 1, 2],
    BW_EGR: [1000, 1000, 10000, 100000], BW_IGR: [1000, 1000, 10000, 100000],
    "SRIOV_NET_VF": [1],
}
BIG_AMOUNTS = {"VCPU": 33, "MEMORY_MB": 20000, "DISK_GB": 1500, BW_EGR: 2000000,
               BW_IGR: 2000000}
HOSTISH_TRAITS = ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "STORAGE_DISK_SSD", "CUSTOM_GOLD",
                  "COMPUTE_STATUS_DISABLED", "HW_NUMA_ROOT", "MISC_SHARES_VIA_AGGREGATE"]
# Standard traits no provider in a generated world carries: valid, never matched.
UNUSED_TRAITS = ["HW_GPU_API_VULKAN", "HW_NIC_SRIOV"]
STRING_SUFFIXES = ["_NUMA", "_PORT1", "_PORT2", "_DISK", "_ACCEL-x"]


@dataclass
class Group:
    suffix: str
    resources: dict[str, int] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)  # one entry per ``required`` param
    member_of: list[str] = field(default_factory=list)
    in_tree: str | None = None


@dataclass
class Query:
    version: str
    params: list[tuple[str, str]]
    groups: list[Group]
    group_policy: str | None = None
    stretch: str = ""  # why this query may deliberately be invalid

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    def url(self) -> str:
        return "/allocation_candidates?" + urlencode(self.params, safe=":,!")

    def reference_bug(self, world: World) -> str | None:
        """Why the reference's answer cannot be trusted for this query, if it cannot.

        Two bugs of openstack-placement 16.0.0 (see docs/differential.md):
        1. the unnumbered group and a numbered group ask for the same class and
           group_policy is not ``none``: amounts are added in place on a shared
           object, so they grow from candidate to candidate;
        2. the unnumbered group could be served by sharing providers alone and
           there are numbered groups: the unnumbered group's candidates are kept
           in a set that ignores their anchor tree, so one sharing candidate per
           provider survives, anchored to whichever tree came first in database
           order, and combinations with numbered groups in other trees are lost.
        """
        unnumbered = next((g for g in self.groups if g.suffix == ""), None)
        numbered = [g for g in self.groups if g.suffix and g.resources]
        if unnumbered is None or not unnumbered.resources or not numbered:
            return None
        if self.group_policy != "none":
            for g in numbered:
                shared = set(g.resources) & set(unnumbered.resources)
                if shared:
                    return (f"reference bug 1: class {sorted(shared)[0]} in the unnumbered "
                            f"group and group '{g.suffix}' with group_policy="
                            f"{self.group_policy}")
        sharable = {rc for p in world.providers
                    if "MISC_SHARES_VIA_AGGREGATE" in p.traits and p.aggregates
                    for rc in p.inventories}
        if set(unnumbered.resources) <= sharable:
            return ("reference bug 2: the unnumbered group can come from sharing providers "
                    "alone and there are numbered groups")
        return None


def pick_version(rng: random.Random) -> int:
    # Half the queries at nested-aware versions, where most of the logic lives.
    return rng.randint(29, 39) if rng.random() < 0.5 else rng.randint(10, 39)


class _Gen:
    def __init__(self, world: World, rng: random.Random, minor: int) -> None:
        self.world = world
        self.rng = rng
        self.minor = minor
        self.classes = world.resource_classes() or ["VCPU"]
        self.aggs = [*world.aggregates, make_uuid(rng)]  # one nobody is in

    def amount(self, rc: str) -> int:
        if rc in BIG_AMOUNTS and self.rng.random() < 0.03:
            return BIG_AMOUNTS[rc]
        return self.rng.choice(AMOUNTS.get(rc, [1, 2]))

    def resources(self, classes: list[str]) -> dict[str, int]:
        return {rc: self.amount(rc) for rc in classes if rc in self.classes}

    def flavor(self) -> dict[str, int]:
        rng = self.rng
        classes = ["VCPU", "MEMORY_MB"][: rng.randint(1, 2)]
        if rng.random() < 0.6:
            classes.append("DISK_GB")
        if rng.random() < 0.1:
            classes.append(rng.choice(["PCPU", "CUSTOM_FPGA", "IPV4_ADDRESS"]))
        return self.resources(classes) or {"VCPU": 1}

    def trait(self, pool: list[str]) -> str:
        return self.rng.choice(UNUSED_TRAITS if self.rng.random() < 0.08 else pool)

    def trait_expr(self, pool: list[str]) -> str:
        """One ``required`` value: traits, some forbidden (1.22+), or ``in:`` (1.39+)."""
        rng = self.rng
        if self.minor >= 39 and rng.random() < 0.3:
            return "in:" + ",".join(sorted({self.trait(pool), self.trait(pool)}))
        picked: dict[str, str] = {}
        for _ in range(1 if rng.random() < 0.7 else 2):
            t = self.trait(pool)
            forbid = self.minor >= 22 and rng.random() < 0.4
            picked[t] = "!" + t if forbid else t
        return ",".join(picked.values())

    def required(self, pool: list[str], p: float = 0.4) -> list[str]:
        if self.minor < 17 or self.rng.random() >= p:
            return []
        exprs = [self.trait_expr(pool)]
        if self.minor >= 39 and self.rng.random() < 0.2:
            exprs.append(self.trait_expr(pool))
        return exprs

    def member_of(self, p: float = 0.3) -> list[str]:
        rng = self.rng
        if self.minor < 21 or rng.random() >= p:
            return []
        out = []
        for _ in range(2 if self.minor >= 24 and rng.random() < 0.3 else 1):
            form = rng.random()
            two = ",".join(rng.sample(self.aggs, min(2, len(self.aggs))))
            if form < 0.5:
                out.append(rng.choice(self.aggs))
            elif form < 0.8 or self.minor < 32:
                out.append("in:" + two)
            elif form < 0.9:
                out.append("!" + rng.choice(self.aggs))
            else:
                out.append("!in:" + two)
        return out

    def in_tree(self, p: float) -> str | None:
        if self.minor < 31 or self.rng.random() >= p:
            return None
        if self.rng.random() < 0.1:
            return make_uuid(self.rng)  # a provider that does not exist
        return self.rng.choice(self.world.providers).uuid

    def suffixes(self, n: int) -> list[str]:
        if self.minor >= 33 and self.rng.random() < 0.5:
            return self.rng.sample(STRING_SUFFIXES, n)
        return [str(s) for s in self.rng.sample(range(1, 6), n)]

    def unnumbered(self, resources: dict[str, int]) -> Group:
        return Group("", resources, self.required(HOSTISH_TRAITS), self.member_of(),
                     self.in_tree(0.15))

    def numa_group(self, suffix: str) -> Group:
        g = Group(suffix, self.resources(["VCPU", "MEMORY_MB"][: self.rng.randint(1, 2)]))
        g.required = self.required(["HW_NUMA_ROOT", "CUSTOM_GOLD"], 0.4)
        return g

    def port_group(self, suffix: str) -> Group:
        rng = self.rng
        g = Group(suffix, self.resources([BW_EGR, BW_IGR][: rng.randint(1, 2)]))
        if self.minor >= 17 and rng.random() < 0.6:
            traits = {rng.choice(PHYSNETS), rng.choice(VNIC_TYPES)}
            g.required = [",".join(sorted(traits)[: rng.randint(1, 2)])]
        return g

    def random_group(self, suffix: str) -> Group:
        g = Group(suffix, self.resources(self.rng.sample(self.classes, 1)))
        g.required = self.required(self.world.traits() or HOSTISH_TRAITS, 0.3)
        g.member_of = self.member_of(0.2)
        g.in_tree = self.in_tree(0.1)
        return g


def generate_query(world: World, seed: int | str, index: int) -> Query:
    """Query number ``index`` for this world seed: a scenario, perturbed at random.

    Scenarios mirror real requests: a flavor (unnumbered VCPU/MEMORY_MB/DISK_GB),
    a NUMA-pinned flavor (one numbered group per NUMA node), a flavor plus ports
    (numbered bandwidth groups with physnet/vnic traits, same_subtree with a
    resourceless group from 1.36), and random groups over everything the world has.
    """
    rng = random.Random(f"query/{seed}/{index}")
    minor = pick_version(rng)
    gen = _Gen(world, rng, minor)
    granular = minor >= 25
    scenario = rng.choice(["flavor", "flavor", "numa", "ports", "random"]) if granular \
        else "flavor"
    groups: list[Group] = []
    if scenario == "flavor":
        groups.append(gen.unnumbered(gen.flavor()))
    elif scenario == "numa":
        if rng.random() < 0.6:
            groups.append(gen.unnumbered(gen.resources(["DISK_GB"])) if "DISK_GB" in
                          gen.classes else gen.unnumbered(gen.flavor()))
        groups += [gen.numa_group(s) for s in gen.suffixes(rng.randint(1, 2))]
    elif scenario == "ports":
        groups.append(gen.unnumbered(gen.flavor()))
        groups += [gen.port_group(s) for s in gen.suffixes(rng.randint(1, 2))]
    else:
        if rng.random() < 0.5:
            groups.append(gen.unnumbered(gen.resources(
                rng.sample(gen.classes, min(len(gen.classes), rng.randint(1, 2))))))
        groups += [gen.random_group(s) for s in gen.suffixes(rng.randint(1, 3))]
    groups = [g for g in groups if g.resources] or [Group("", {"VCPU": 1})]

    wide: list[tuple[str, str]] = []
    numbered = [g.suffix for g in groups if g.suffix]
    if minor >= 36 and numbered and rng.random() < 0.5:
        # same_subtree over some groups, maybe with a resourceless group (a NIC's
        # agent, a NUMA node) that only pins where the others come from.
        members = rng.sample(numbered, rng.randint(1, len(numbered)))
        if rng.random() < 0.6:
            free = [s for s in [*STRING_SUFFIXES, "7", "8"] if s not in numbered]
            rless = Group(rng.choice(free), required=[rng.choice(
                [*VNIC_TYPES, "HW_NUMA_ROOT", "CUSTOM_GOLD"])])
            groups.append(rless)
            members.append(rless.suffix)
        if len(members) >= 2:
            wide.append(("same_subtree", ",".join(members)))
    policy: str | None = None
    if sum(1 for g in groups if g.suffix) > 1 or (numbered and rng.random() < 0.5):
        policy = rng.choice(["none", "isolate"])
        wide.append(("group_policy", policy))
    if minor >= 35 and rng.random() < 0.2:
        wide.append(("root_required", rng.choice(
            ["!COMPUTE_STATUS_DISABLED", "HW_CPU_X86_AVX2", "HW_CPU_X86_AVX2,!CUSTOM_GOLD",
             "STORAGE_DISK_SSD", "MISC_SHARES_VIA_AGGREGATE"])))
    if minor >= 16 and rng.random() < 0.25:
        wide.append(("limit", str(rng.choice([1, 2, 5, 50]))))

    query = Query(f"1.{minor}", [], groups, policy)
    if rng.random() < 0.07:
        _stretch(query, gen, wide)
    query.params = _params(query.groups) + wide
    return query


def _params(groups: list[Group]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for g in groups:
        if g.resources:
            out.append((f"resources{g.suffix}",
                        ",".join(f"{rc}:{n}" for rc, n in g.resources.items())))
        out += [(f"required{g.suffix}", r) for r in g.required]
        out += [(f"member_of{g.suffix}", m) for m in g.member_of]
        if g.in_tree:
            out.append((f"in_tree{g.suffix}", g.in_tree))
    return out


def _stretch(query: Query, gen: _Gen, wide: list[tuple[str, str]]) -> None:
    """Make the query step outside the rules in one way, for error-handling parity."""
    rng = gen.rng
    first = query.groups[0]
    choice = rng.randrange(8)
    if choice == 0:
        first.required = [*first.required, "CUSTOM_NO_SUCH_TRAIT"]
        query.stretch = "unknown trait"
    elif choice == 1:
        first.resources = {**first.resources, "CUSTOM_NO_SUCH_CLASS": 1}
        query.stretch = "unknown resource class"
    elif choice == 2:
        first.resources = {**first.resources, next(iter(first.resources or {"VCPU": 0})): 0}
        query.stretch = "zero amount"
    elif choice == 3:
        # A feature one version too new: the version picks which one.
        wide.append(("limit", "3") if query.minor < 16 else ("root_required", "HW_CPU_X86_AVX2")
                    if query.minor < 35 else ("same_subtree", "_NOPE"))
        query.stretch = "parameter not valid at this version or suffix unknown"
    elif choice == 4:
        first.required = [*first.required, "!HW_CPU_X86_AVX2"]
        query.stretch = "forbidden trait (invalid before 1.22)"
    elif choice == 5:
        query.groups.append(Group("9", required=["HW_CPU_X86_AVX2"]))
        query.stretch = "orphan required9 without resources9"
    elif choice == 6:
        query.groups += [Group("8", {"VCPU": 1}), Group("9", {"MEMORY_MB": 256})]
        for i, (k, _) in enumerate(wide):
            if k == "group_policy":
                del wide[i]
                break
        query.group_policy = None
        query.stretch = "several numbered groups without group_policy (invalid before 1.25 too)"
    else:
        first.member_of = [*first.member_of, "not-a-uuid"]
        query.stretch = "malformed aggregate uuid"
