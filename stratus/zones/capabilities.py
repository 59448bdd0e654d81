"""What a zone can offer, in one schema that senders build and matchers read (design
document 003 leaves this "to be worked out": here it is).

A leaf derives its capabilities from its hosts; a parent merges its children's. Only
summaries travel up, never host lists::

    resources   per resource class: total and free (summed over hosts), and the
                largest free on any one host (the most one new server could get)
    traits      every trait some host has (a union)
    zones       the availability zones of its hosts
    flavors     the flavor names some host could fit right now
    images      the ids of the active images its leaves can boot
    leaves      the leaf zones it summarises (a leaf: itself)
    weights     the weighers it ranks with (a tree must rank alike at every level)
    hosts       how many hosts it summarises

``could_match`` is the routing test: a request that needs more of a class than the
largest free, a trait no host has, an availability zone it lacks, or a flavor none of
its hosts could fit, an image none of its leaves has, or zones it does not hold (a
boot pinned to one leaf by its port or its server group), cannot be placed below this
zone, so the request does not go there. It is a necessary condition only: a zone that
could may still answer with no host (the largest free VCPU and the largest free memory
may be on different hosts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 2
ANY_IMAGE = "*"   # a leaf without an image service takes a boot's image as it is


class CapabilityError(ValueError):
    """Capabilities that do not follow the schema (the message says which field)."""


@dataclass(frozen=True)
class ClassCapacity:
    total: int
    free: int
    largest_free: int


@dataclass(frozen=True)
class Capabilities:
    zone: str
    hosts: int
    resources: Mapping[str, ClassCapacity]
    traits: frozenset[str] = frozenset()
    availability_zones: frozenset[str] = frozenset()
    flavors: frozenset[str] = frozenset()
    generated_at: float = 0.0
    images: frozenset[str] = frozenset()
    leaves: frozenset[str] = frozenset()
    weights: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION, "zone": self.zone, "hosts": self.hosts,
                "resources": {rc: [c.total, c.free, c.largest_free]
                              for rc, c in sorted(self.resources.items())},
                "traits": sorted(self.traits),
                "availability_zones": sorted(self.availability_zones),
                "flavors": sorted(self.flavors), "generated_at": self.generated_at,
                "images": sorted(self.images), "leaves": sorted(self.leaves),
                "weights": dict(sorted(self.weights.items()))}

    @classmethod
    def from_dict(cls, data: Any) -> Capabilities:
        """Parse what a child sent; CapabilityError for anything off the schema (a child
        is trusted to speak for itself, not to send what cannot be summed)."""
        if not isinstance(data, dict):
            raise CapabilityError("capabilities must be an object")
        schema = data.get("schema")
        if type(schema) is not int or schema != SCHEMA_VERSION:
            raise CapabilityError(f"capabilities schema {schema!r} is not {SCHEMA_VERSION}")
        for key in ("zone", "hosts", "resources"):
            if key not in data:
                raise CapabilityError(f"capabilities lack '{key}'")
        if not isinstance(data["zone"], str) or not data["zone"]:
            raise CapabilityError("zone must be a non-empty string")
        resources_in = data["resources"]
        if not isinstance(resources_in, dict):
            raise CapabilityError("resources must be an object")
        resources = {}
        for rc, figures in resources_in.items():
            if not isinstance(figures, list) or len(figures) != 3:
                raise CapabilityError(f"resources.{rc} must be [total, free, largest_free]")
            total, free, largest = (_count(f"resources.{rc}", x) for x in figures)
            if largest > free or free > total:
                raise CapabilityError(f"resources.{rc}: inconsistent figures {figures}")
            resources[str(rc)] = ClassCapacity(total, free, largest)
        generated = data.get("generated_at", 0.0)
        if type(generated) not in (int, float) or generated != generated \
                or generated in (float("inf"), float("-inf")):
            raise CapabilityError("generated_at must be a finite number")
        weights = data.get("weights", {})
        if not isinstance(weights, dict) or not all(
                isinstance(k, str) and type(v) in (int, float) and v == v
                and abs(v) != float("inf") for k, v in weights.items()):
            raise CapabilityError("weights must map weigher names to numbers")
        return cls(zone=data["zone"], hosts=_count("hosts", data["hosts"]),
                   resources=resources, traits=_names(data, "traits"),
                   availability_zones=_names(data, "availability_zones"),
                   flavors=_names(data, "flavors"), generated_at=float(generated),
                   images=_names(data, "images"), leaves=_names(data, "leaves"),
                   weights={str(k): float(v) for k, v in weights.items()})


def _count(where: str, value: Any) -> int:
    if type(value) is not int or value < 0:
        raise CapabilityError(f"{where}: {value!r} is not a whole number >= 0")
    return value


def _names(data: dict[str, Any], key: str) -> frozenset[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CapabilityError(f"{key} must be a list of strings")
    return frozenset(value)


@dataclass(frozen=True)
class HostFigures:
    """One host as a leaf sees it: free and total per class (over its whole provider
    tree), its traits, its availability zone."""

    name: str
    total: Mapping[str, int]
    free: Mapping[str, int]
    traits: frozenset[str] = frozenset()
    availability_zone: str | None = None


def from_hosts(zone: str, hosts: Iterable[HostFigures],
               flavors: Mapping[str, Mapping[str, int]], now: float,
               images: Iterable[str] = ()) -> Capabilities:
    """A leaf's capabilities; ``flavors`` maps flavor names to what each needs of a host."""
    totals: dict[str, list[int]] = {}
    traits: set[str] = set()
    zones: set[str] = set()
    fits: set[str] = set()
    count = 0
    for host in hosts:
        count += 1
        for rc, total in host.total.items():
            figures = totals.setdefault(rc, [0, 0, 0])
            free = max(0, int(host.free.get(rc, 0)))
            figures[0] += int(total)
            figures[1] += free
            figures[2] = max(figures[2], free)
        traits |= host.traits
        if host.availability_zone:
            zones.add(host.availability_zone)
        fits |= {name for name, needs in flavors.items() if name not in fits and all(
            host.free.get(rc, 0) >= n for rc, n in needs.items())}
    return Capabilities(zone, count, {rc: ClassCapacity(*f) for rc, f in totals.items()},
                        frozenset(traits), frozenset(zones), frozenset(fits), now,
                        frozenset(images), frozenset({zone}))


def merge(zone: str, children: Iterable[Capabilities], now: float,
          weights: Mapping[str, float] | None = None) -> Capabilities:
    """A parent's capabilities: sums and maxima of its children's, sets unioned."""
    totals: dict[str, list[int]] = {}
    traits: set[str] = set()
    zones: set[str] = set()
    flavors: set[str] = set()
    images: set[str] = set()
    leaves: set[str] = set()
    count = 0
    for child in children:
        count += child.hosts
        images |= child.images
        leaves |= child.leaves
        for rc, c in child.resources.items():
            figures = totals.setdefault(rc, [0, 0, 0])
            figures[0] += c.total
            figures[1] += c.free
            figures[2] = max(figures[2], c.largest_free)
        traits |= child.traits
        zones |= child.availability_zones
        flavors |= child.flavors
    return Capabilities(zone, count, {rc: ClassCapacity(*f) for rc, f in totals.items()},
                        frozenset(traits), frozenset(zones), frozenset(flavors), now,
                        frozenset(images), frozenset(leaves), dict(weights or {}))


@dataclass(frozen=True)
class Requirement:
    """What a request needs of one host, as routing reads it."""

    resources: Mapping[str, int] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    availability_zone: str | None = None
    flavor: str | None = None
    image: str | None = None
    # Only these leaf zones may take it (a port lives in one; a server group's affinity
    # keeps its members in one); None: any.
    zones: frozenset[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"resources": dict(self.resources), "traits": sorted(self.traits),
                "availability_zone": self.availability_zone, "flavor": self.flavor,
                "image": self.image,
                "zones": sorted(self.zones) if self.zones is not None else None}

    @classmethod
    def from_dict(cls, data: Any) -> Requirement:
        """A requirement as sent; CapabilityError if it is not one."""
        if not isinstance(data, Mapping):
            raise CapabilityError("a requirement must be an object")
        try:
            resources = {str(k): int(v) for k, v in (data.get("resources") or {}).items()}
            traits = frozenset(map(str, data.get("traits") or ()))
            zones = data.get("zones")
            return cls(resources, traits, _text(data.get("availability_zone")),
                       _text(data.get("flavor")), _text(data.get("image")),
                       frozenset(map(str, zones)) if zones is not None else None)
        except (TypeError, ValueError, AttributeError) as exc:
            raise CapabilityError(f"a requirement's figures must be numbers ({exc})") from None


def _text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise CapabilityError(f"{value!r} is not a string")
    return value


def could_match(caps: Capabilities, need: Requirement) -> str | None:
    """None if a host below this zone could take the request; else why not."""
    if caps.hosts == 0:
        return "no hosts"
    if need.availability_zone and need.availability_zone not in caps.availability_zones:
        return f"no host in availability zone {need.availability_zone}"
    for rc, amount in sorted(need.resources.items()):
        have = caps.resources.get(rc)
        largest = have.largest_free if have else 0
        if largest < amount:
            return f"needs {amount} {rc}; the most free on one host is {largest}"
    missing = sorted(need.traits - caps.traits)
    if missing:
        return f"no host with trait(s) {', '.join(missing)}"
    if need.flavor and need.flavor not in caps.flavors:
        return f"no host with room for flavor {need.flavor} (on one host at once)"
    if need.image and need.image not in caps.images and ANY_IMAGE not in caps.images:
        return f"no image {need.image}"
    if need.zones is not None and not need.zones & caps.leaves:
        return f"holds none of zone(s) {', '.join(sorted(need.zones))}"
    return None
