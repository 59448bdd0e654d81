"""Weighers: rank the hosts that passed the filters.

A weigher gives each host a raw score; scores are normalised to 0..1 across
the hosts being weighed, multiplied by the weigher's multiplier from config and
summed. Positive multipliers prefer more of the thing (spread by free RAM),
negative ones prefer less (pack).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import RequestSpec

Weigher = Callable[[HostState, RequestSpec], float]


def ram(host: HostState, spec: RequestSpec) -> float:
    return float(host.free_memory_mb)


def cpu(host: HostState, spec: RequestSpec) -> float:
    return float(host.free_vcpus)


def disk(host: HostState, spec: RequestSpec) -> float:
    return float(host.free_disk_gb)


def num_instances(host: HostState, spec: RequestSpec) -> float:
    return float(host.num_instances)


def affinity(host: HostState, spec: RequestSpec) -> float:
    """Soft (anti-)affinity: +1 per group member here for soft-affinity, -1 for soft-anti."""
    group = spec.server_group
    if group is None or host.host not in group.hosts:
        return 0.0
    if group.policy == "soft-affinity":
        return 1.0
    if group.policy == "soft-anti-affinity":
        return -1.0
    return 0.0


REGISTRY: dict[str, Weigher] = {
    "ram": ram, "cpu": cpu, "disk": disk, "num_instances": num_instances, "affinity": affinity,
}
DEFAULT_MULTIPLIERS: dict[str, float] = {
    "ram": 1.0, "cpu": 1.0, "disk": 1.0, "num_instances": 0.0, "affinity": 1.0,
}


@dataclass(frozen=True)
class Weighed:
    host: HostState
    weight: float


def _normalise(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi == lo:
        return [0.0 for _ in values]
    return [(v - lo) / (hi - lo) for v in values]


def weigh(
    hosts: Sequence[HostState], spec: RequestSpec, multipliers: Mapping[str, float],
) -> list[Weighed]:
    """Hosts best first; ties keep their incoming order (stable sort)."""
    if not hosts:
        return []
    unknown = [n for n in multipliers if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown weigher(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    totals = [0.0] * len(hosts)
    for name, multiplier in multipliers.items():
        if multiplier == 0:
            continue
        scores = _normalise([REGISTRY[name](h, spec) for h in hosts])
        for i, score in enumerate(scores):
            totals[i] += multiplier * score
    ranked = sorted(range(len(hosts)), key=lambda i: -totals[i])
    return [Weighed(hosts[i], totals[i]) for i in ranked]
