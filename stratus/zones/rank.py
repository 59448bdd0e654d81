"""Ranking hosts across zones so that a tree picks exactly what one flat scheduler would.

Each zone returns its best N hosts with the raw attributes its weighers used; a parent
merges its children's lists and re-weighs them. That equals a flat scheduler's best N
over the union of hosts only if a host's score depends on the host alone: Nova's
weighers normalise each score over the set being weighed (min to max), so a host's rank
could change with the company it is in, and the best host of the union might not be in
its own zone's best N. Zones therefore weigh *per host*: each weigher's value is scaled
by what the host itself has (free RAM / its RAM, ...), multiplied and summed. With one
total order (score, then zone and host as tie-breaks) the best N of the union is the
best N of the union of each zone's best N, at every level (a property test checks it
against a flat ranking on random trees and fleets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

# The weighers zones use: name -> (attribute, the attribute that scales it or None).
WEIGHERS: dict[str, tuple[str, str | None]] = {
    "ram": ("free_memory_mb", "memory_mb"),
    "cpu": ("free_vcpus", "vcpus"),
    "disk": ("free_disk_gb", "disk_gb"),
    "num_instances": ("instances", None),
}


@dataclass(frozen=True)
class Candidate:
    """One host as it travels up the tree: where it is and what its weighers read."""

    zone: str           # the leaf zone that holds it
    host: str
    node: str
    vcpus: int
    free_vcpus: int
    memory_mb: int
    free_memory_mb: int
    disk_gb: int
    free_disk_gb: int
    instances: int
    # The zones from the one holding this list down to ``zone``: how a build is routed
    # (each zone passes it only to its own child). Not part of the ranking.
    route: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["route"] = list(self.route)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        return cls(zone=str(data["zone"]), host=str(data["host"]), node=str(data["node"]),
                   route=tuple(str(z) for z in data.get("route") or ()),
                   **{k: int(data[k]) for k in ("vcpus", "free_vcpus", "memory_mb",
                                                "free_memory_mb", "disk_gb", "free_disk_gb",
                                                "instances")})

    def via(self, zone: str) -> Candidate:
        """This candidate as ``zone``, the parent of the first zone on its route, passes
        it up."""
        return replace(self, route=(zone, *self.route))


def score(c: Candidate, multipliers: Mapping[str, float]) -> float:
    """The host's weight, from the host alone."""
    total = 0.0
    for name, multiplier in multipliers.items():
        if not multiplier or name not in WEIGHERS:
            continue
        attribute, scale = WEIGHERS[name]
        value = float(getattr(c, attribute))
        if scale is not None:
            cap = float(getattr(c, scale))
            value = value / cap if cap > 0 else 0.0
        else:
            value = value / (value + 1.0)   # counts: bounded, still ordered
        total += multiplier * value
    return total


def best(candidates: Iterable[Candidate], multipliers: Mapping[str, float],
         n: int) -> list[Candidate]:
    """The best ``n``: score first, then zone and host, so every level agrees."""
    ranked = sorted(candidates, key=lambda c: (-score(c, multipliers), c.zone, c.host))
    return ranked[:n]


def check_weighers(multipliers: Mapping[str, float]) -> None:
    unknown = sorted(set(multipliers) - set(WEIGHERS))
    if unknown:
        raise ValueError(f"zones cannot weigh by {', '.join(unknown)} (they weigh per host "
                         f"by {', '.join(WEIGHERS)})")
