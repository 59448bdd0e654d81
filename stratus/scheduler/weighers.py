"""Weighers: rank the hosts that passed the filters.

A weigher gives each host a raw score; scores are normalised to 0..1 across
the hosts being weighed, multiplied by the weigher's multiplier from config and
summed. Positive multipliers prefer more of the thing (spread by free RAM),
negative ones prefer less (pack).

The normalisation's bounds are the lowest and highest raw score among the hosts
weighed, unless given: a zone tree (``stratus.zones.rank``) weighs each zone's hosts
with the bounds of every host the tree's request passed, so each zone's best are
the best a flat scheduler over all of them would pick.

Each weigher also has a column form (``COLUMN_FORMS``: every host's raw score at once,
for the columnar path of ``columns.py``); :func:`weigh_columns` normalises and sums them
exactly as :func:`weigh` does, so both rank alike (to the last bit of each weight:
``tests/property/test_columnar_equivalence.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stratus.scheduler.host_state import HostState
from stratus.scheduler.request import RequestSpec

if TYPE_CHECKING:
    from stratus.scheduler.columns import HostColumns

Weigher = Callable[[HostState, RequestSpec], float]
ColumnWeigher = Callable[["HostColumns", RequestSpec], np.ndarray]


def ram(host: HostState, spec: RequestSpec) -> float:
    return float(host.free_memory_mb)


def cpu(host: HostState, spec: RequestSpec) -> float:
    return float(host.free_vcpus)


def disk(host: HostState, spec: RequestSpec) -> float:
    return float(host.free_disk_gb)


def num_instances(host: HostState, spec: RequestSpec) -> float:
    return float(host.num_instances)


def project_spread(host: HostState, spec: RequestSpec) -> float:
    """Design document 003's example: prefer hosts without this project's servers (a
    positive multiplier spreads a customer's servers, so one host failing takes fewer
    of them down), though a host that has some is still taken if it is the only one."""
    return -float(host.project_instances)


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


def ram_columns(cols: HostColumns, spec: RequestSpec) -> np.ndarray:
    return (cols.memory_mb_total - cols.memory_mb_used).astype(np.float64)


def cpu_columns(cols: HostColumns, spec: RequestSpec) -> np.ndarray:
    return (cols.vcpus_total - cols.vcpus_used).astype(np.float64)


def disk_columns(cols: HostColumns, spec: RequestSpec) -> np.ndarray:
    return (cols.disk_gb_total - cols.disk_gb_used).astype(np.float64)


def num_instances_columns(cols: HostColumns, spec: RequestSpec) -> np.ndarray:
    return cols.num_instances.astype(np.float64)


def project_spread_columns(cols: HostColumns, spec: RequestSpec) -> np.ndarray:
    return -cols.project_instances.astype(np.float64)


def affinity_columns(cols: HostColumns, spec: RequestSpec) -> np.ndarray:
    group = spec.server_group
    sign = {"soft-affinity": 1.0, "soft-anti-affinity": -1.0}.get(
        group.policy if group is not None else "", 0.0)
    if group is None or sign == 0.0:
        return np.zeros(len(cols))
    members = set(group.hosts)
    return np.fromiter((sign if h in members else 0.0 for h in cols.host), np.float64,
                       len(cols))


REGISTRY: dict[str, Weigher] = {
    "ram": ram, "cpu": cpu, "disk": disk, "num_instances": num_instances, "affinity": affinity,
    "project_spread": project_spread,
}
DEFAULT_MULTIPLIERS: dict[str, float] = {
    "ram": 1.0, "cpu": 1.0, "disk": 1.0, "num_instances": 0.0, "affinity": 1.0,
    "project_spread": 0.0,
}
# The weighers that read the servers already on a host (the host manager counts them in
# the cells only when one of these weighs).
COUNTING = ("num_instances", "project_spread")


def needs_counts(multipliers: Mapping[str, float]) -> bool:
    return any(multipliers.get(name) for name in COUNTING)


def parse(items: Sequence[str]) -> dict[str, float]:
    """``["ram:1.0", "cpu"]`` -> {"ram": 1.0, "cpu": 1.0}: how ``[scheduler] weights``
    declares them (ValueError for a bad item or an unknown weigher)."""
    out: dict[str, float] = {}
    for item in items:
        name, _, value = str(item).partition(":")
        try:
            out[name.strip()] = float(value) if value.strip() else 1.0
        except ValueError:
            raise ValueError(f"weight {item!r} is not NAME:MULTIPLIER") from None
    check(out)
    return out


def check(multipliers: Mapping[str, float]) -> None:
    unknown = [n for n in multipliers if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown weigher(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")


COLUMN_FORMS: dict[str, ColumnWeigher] = {
    "ram": ram_columns, "cpu": cpu_columns, "disk": disk_columns,
    "num_instances": num_instances_columns, "affinity": affinity_columns,
    "project_spread": project_spread_columns,
}
# name -> (lowest, highest) raw score: the normalisation of each weigher.
Bounds = Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class Weighed:
    host: HostState
    weight: float


def raw_scores(hosts: Sequence[HostState], spec: RequestSpec,
               multipliers: Mapping[str, float]) -> dict[str, list[float]]:
    """Each weighing weigher's raw score of each host."""
    check(multipliers)
    return {name: [REGISTRY[name](h, spec) for h in hosts]
            for name, m in multipliers.items() if m != 0}


def bounds_of(scores: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, float]]:
    return {name: (min(values), max(values)) for name, values in scores.items() if values}


def combine(scores: Mapping[str, Sequence[float]], multipliers: Mapping[str, float],
            bounds: Bounds, count: int) -> list[float]:
    """Each host's weight: its normalised scores times their multipliers, summed (in
    the multipliers' order, the same float operations as :func:`weigh_columns`)."""
    totals = [0.0] * count
    for name, multiplier in multipliers.items():
        if multiplier == 0:
            continue
        lo, hi = bounds[name]
        if hi == lo:
            continue
        for i, value in enumerate(scores[name]):
            totals[i] += multiplier * ((value - lo) / (hi - lo))
    return totals


def weigh(
    hosts: Sequence[HostState], spec: RequestSpec, multipliers: Mapping[str, float],
    bounds: Bounds | None = None,
) -> list[Weighed]:
    """Hosts best first; ties keep their incoming order (stable sort). ``bounds``: the
    normalisation's (default: these hosts' own lowest and highest scores)."""
    if not hosts:
        return []
    scores = raw_scores(hosts, spec, multipliers)
    totals = combine(scores, multipliers, bounds if bounds is not None
                     else bounds_of(scores), len(hosts))
    ranked = sorted(range(len(hosts)), key=lambda i: -totals[i])
    return [Weighed(hosts[i], totals[i]) for i in ranked]


def column_scores(cols: HostColumns, hosts: np.ndarray, spec: RequestSpec,
                  multipliers: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Each weighing weigher's raw score of ``hosts`` (indices into ``cols``)."""
    return {name: COLUMN_FORMS[name](cols, spec)[hosts]
            for name, m in multipliers.items() if m != 0}


def combine_columns(scores: Mapping[str, np.ndarray], multipliers: Mapping[str, float],
                    bounds: Bounds, count: int) -> np.ndarray:
    """:func:`combine` over columns: the same operations in the same order, per host."""
    totals = np.zeros(count)
    for name, multiplier in multipliers.items():
        if multiplier == 0:
            continue
        lo, hi = bounds[name]
        if hi != lo:
            totals += multiplier * ((scores[name] - lo) / (hi - lo))
    return totals


def weigh_columns(cols: HostColumns, hosts: np.ndarray, spec: RequestSpec,
                  multipliers: Mapping[str, float]) -> np.ndarray:
    """``hosts`` (indices into ``cols``) best first, as :func:`weigh` ranks them: the
    same normalisation, the same sums in the same order, the same stable sort."""
    if not len(hosts):
        return hosts
    scores = column_scores(cols, hosts, spec, multipliers)
    bounds = {name: (float(v.min()), float(v.max())) for name, v in scores.items()}
    totals = combine_columns(scores, multipliers, bounds, len(hosts))
    return hosts[np.argsort(-totals, kind="stable")]
