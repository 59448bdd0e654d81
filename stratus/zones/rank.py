"""Ranking across zones with the flat scheduler's own weighers, so that a tree picks
exactly what one flat scheduler over all its hosts would pick.

The flat weighers (:mod:`stratus.scheduler.weighers`) normalise each raw score between
the lowest and the highest among the hosts weighed, so a host's weight depends on its
company: a zone weighing its own hosts alone could leave out of its best N a host that
wins among all hosts. So a selection has two passes down the tree:

1. **survey**: every leaf filters its hosts (its scheduler's candidates and host
   filters) and keeps them for a few seconds; each zone answers the lowest and highest
   raw score of each weigher over what passed below it (:func:`bounds_of`,
   :func:`merge_bounds`);
2. **rank**: with the bounds of the whole tree, every zone weighs (:func:`best`) and
   passes up its best N; each parent merges and weighs again with the same bounds.

With one normalisation for all and one total order (weight, then zone and host), a
host's weight no longer depends on its company, and the best N of the union is the
best N of the union of each part's best N, at every level (a property test checks it
against ``weighers.weigh`` over all hosts on random trees).

A candidate carries the facts the leaf's weighers read (capacity and usage, the servers
on the host and how many are the project's, whether a member of the request's server
group is there), never the scores: every level computes the scores from the facts
with the same weigher functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from stratus.scheduler import weighers
from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import Flavor, RequestSpec, ServerGroup

Bounds = dict[str, tuple[float, float]]
_COUNTS = ("vcpus_total", "vcpus_used", "memory_mb_total", "memory_mb_used", "disk_gb_total",
           "disk_gb_used", "instances", "project_instances")


class CandidateError(ValueError):
    """A candidate or bounds that do not follow the schema (the message says which)."""


@dataclass(frozen=True)
class Candidate:
    """One host as it travels up the tree: where it is and what its weighers read."""

    zone: str           # the leaf zone that holds it
    host: str
    node: str
    vcpus_total: int
    vcpus_used: int
    memory_mb_total: int
    memory_mb_used: int
    disk_gb_total: int
    disk_gb_used: int
    instances: int = 0              # servers on the host (every project)
    project_instances: int = 0      # of them, the request's project's
    group_member: bool = False      # a member of the request's server group is here
    # The zones from the one holding this list down to ``zone``: how a build is routed
    # (each zone passes it only to its own child). Not part of the ranking.
    route: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The host's name in the whole tree (host names repeat across zones)."""
        return f"{self.zone}/{self.host}"

    def free(self, resource_class: str) -> int:
        total, used = {"VCPU": (self.vcpus_total, self.vcpus_used),
                       "MEMORY_MB": (self.memory_mb_total, self.memory_mb_used),
                       "DISK_GB": (self.disk_gb_total, self.disk_gb_used)}[resource_class]
        return total - used

    def total(self, resource_class: str) -> int:
        return {"VCPU": self.vcpus_total, "MEMORY_MB": self.memory_mb_total,
                "DISK_GB": self.disk_gb_total}[resource_class]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["route"] = list(self.route)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Candidate:
        """Parse what a child sent; CandidateError for anything off the schema."""
        if not isinstance(data, dict):
            raise CandidateError("a candidate must be an object")
        names: dict[str, str] = {}
        for key in ("zone", "host", "node"):
            value = data.get(key)
            if not isinstance(value, str) or not value:
                raise CandidateError(f"candidate {key} must be a non-empty string")
            names[key] = value
        counts: dict[str, int] = {}
        for key in _COUNTS:
            value = data.get(key, 0)
            if type(value) is not int or value < 0:
                raise CandidateError(f"candidate {key}: {value!r} is not a whole number >= 0")
            counts[key] = value
        member = data.get("group_member", False)
        route = data.get("route", [])
        if type(member) is not bool:
            raise CandidateError("candidate group_member must be true or false")
        if not isinstance(route, list) or not all(isinstance(z, str) and z for z in route):
            raise CandidateError("candidate route must be a list of zone names")
        return cls(zone=names["zone"], host=names["host"], node=names["node"],
                   vcpus_total=counts["vcpus_total"], vcpus_used=counts["vcpus_used"],
                   memory_mb_total=counts["memory_mb_total"],
                   memory_mb_used=counts["memory_mb_used"],
                   disk_gb_total=counts["disk_gb_total"], disk_gb_used=counts["disk_gb_used"],
                   instances=counts["instances"],
                   project_instances=counts["project_instances"], group_member=member,
                   route=tuple(route))

    def via(self, zone: str) -> Candidate:
        """This candidate as ``zone``, the parent of the first zone on its route, passes
        it up."""
        return replace(self, route=(zone, *self.route))

    def state(self) -> HostState:
        """The host as the flat weighers read it (named by its key)."""
        return HostState(host=self.key, nodename=self.node, uuid=self.key,
                         vcpus_total=self.vcpus_total, vcpus_used=self.vcpus_used,
                         memory_mb_total=self.memory_mb_total,
                         memory_mb_used=self.memory_mb_used, disk_gb_total=self.disk_gb_total,
                         disk_gb_used=self.disk_gb_used, instance_count=self.instances,
                         project_instance_count=self.project_instances)

    @classmethod
    def of(cls, zone: str, state: HostState, group_member: bool) -> Candidate:
        return cls(zone=zone, host=state.host, node=state.nodename,
                   vcpus_total=state.vcpus_total, vcpus_used=state.vcpus_used,
                   memory_mb_total=state.memory_mb_total, memory_mb_used=state.memory_mb_used,
                   disk_gb_total=state.disk_gb_total, disk_gb_used=state.disk_gb_used,
                   instances=state.num_instances, project_instances=state.project_instances,
                   group_member=group_member, route=(zone,))


def weighing_spec(project_id: str, policy: str | None,
                  candidates: Iterable[Candidate]) -> RequestSpec:
    """What the weighers read of the request at a parent: the project, and the server
    group's hosts as the candidates say (its members' hosts, by their tree-wide keys)."""
    group = None
    if policy:
        group = ServerGroup("tree", policy,
                            frozenset(c.key for c in candidates if c.group_member))
    return RequestSpec(flavor=Flavor("weighing", 0, 0, 0), project_id=project_id,
                       user_id="", server_group=group)


def bounds_of(states: Sequence[HostState], spec: RequestSpec,
              multipliers: Mapping[str, float]) -> Bounds:
    """A leaf's survey: each weighing weigher's lowest and highest raw score."""
    return weighers.bounds_of(weighers.raw_scores(states, spec, multipliers))


def merge_bounds(parts: Iterable[Mapping[str, tuple[float, float]]]) -> Bounds:
    out: Bounds = {}
    for part in parts:
        for name, (lo, hi) in part.items():
            if name in out:
                out[name] = (min(out[name][0], lo), max(out[name][1], hi))
            else:
                out[name] = (lo, hi)
    return out


def bounds_from_dict(data: Any, multipliers: Mapping[str, float]) -> Bounds:
    """Bounds a child sent; CandidateError unless every pair is two finite numbers, low
    first, for a weigher of this zone."""
    if not isinstance(data, dict):
        raise CandidateError("bounds must be an object")
    out: Bounds = {}
    for name, pair in data.items():
        if name not in multipliers:
            raise CandidateError(f"bounds for weigher {name!r}, which this zone does not use")
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(type(x) in (int, float) and x == x and abs(x) != float("inf")
                           for x in pair) or pair[0] > pair[1]):
            raise CandidateError(f"bounds.{name} must be [low, high]")
        out[str(name)] = (float(pair[0]), float(pair[1]))
    return out


def bounds_to_dict(bounds: Mapping[str, tuple[float, float]]) -> dict[str, list[float]]:
    return {name: [lo, hi] for name, (lo, hi) in sorted(bounds.items())}


def ranked(states: Sequence[HostState], spec: RequestSpec, multipliers: Mapping[str, float],
           bounds: Mapping[str, tuple[float, float]], keys: Sequence[tuple[str, str]]
           ) -> list[int]:
    """Indices of ``states`` best first: weight (the flat weighers' own combination, with
    ``bounds``), then ``keys`` (zone, host) so every level breaks ties alike."""
    if not states:
        return []
    scores = weighers.raw_scores(states, spec, multipliers)
    missing = sorted(set(scores) - set(bounds))
    if missing:   # nothing passed anywhere for these: nothing to normalise against
        bounds = {**bounds, **weighers.bounds_of({m: scores[m] for m in missing})}
    totals = weighers.combine(scores, multipliers, bounds, len(states))
    return sorted(range(len(states)), key=lambda i: (-totals[i], keys[i]))


def best(candidates: Sequence[Candidate], multipliers: Mapping[str, float],
         bounds: Mapping[str, tuple[float, float]], n: int, project_id: str = "",
         policy: str | None = None) -> list[Candidate]:
    """The best ``n`` candidates, as a flat scheduler with these bounds ranks them."""
    spec = weighing_spec(project_id, policy, candidates)
    order = ranked([c.state() for c in candidates], spec, multipliers, bounds,
                   [(c.zone, c.host) for c in candidates])
    return [candidates[i] for i in order[:n]]


def plausible(c: Candidate, totals: Mapping[str, int]) -> str | None:
    """None if ``c``'s figures could be true of a zone whose capabilities give these
    totals per class; else what is wrong (a child cannot offer more than it has)."""
    for rc in ("VCPU", "MEMORY_MB", "DISK_GB"):
        if c.free(rc) > c.total(rc):
            return f"{c.key} offers {c.free(rc)} {rc} free of {c.total(rc)}"
        if rc in totals and c.total(rc) > totals[rc]:
            return (f"{c.key} has {c.total(rc)} {rc}, more than its zone's "
                    f"{totals[rc]} in all")
    if c.project_instances > c.instances:
        return f"{c.key} has more of the project's servers than servers"
    return None
