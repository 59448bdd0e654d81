"""What a driver says a node looks like to Placement: a tree of providers, as plain data.

A :class:`ProviderTree` is one compute node: its root provider first, then
children (NUMA cells, network devices) after their parents. Each
:class:`Provider` carries what the resource tracker syncs to Placement:
inventories (reusing Placement's :class:`~stratus.placement.model.Inventory`,
so capacity means the same thing on both sides), traits and aggregates.

Provider UUIDs are derived from names (:func:`stable_uuid`), so a restarted
compute service describes the same providers it did before.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stratus.placement.model import Inventory

# Namespace for the UUIDs Stratus derives from names (providers, aggregates).
NAMESPACE = uuid.UUID("c239c93e-0b88-4b84-b2c6-7635bf423fbf")


def stable_uuid(*parts: str) -> str:
    """The same UUID for the same names, in every process, every time."""
    return str(uuid.uuid5(NAMESPACE, "/".join(parts)))


@dataclass(frozen=True)
class Provider:
    name: str
    uuid: str
    parent_uuid: str | None = None
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()

    def capacity(self, resource_class: str) -> int:
        inv = self.inventories.get(resource_class)
        return inv.capacity if inv is not None else 0

    def inventory_body(self) -> dict[str, dict[str, Any]]:
        """Inventories as Placement's ``PUT .../inventories`` body spells them."""
        return {rc: inv.as_dict() for rc, inv in sorted(self.inventories.items())}

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "uuid": self.uuid, "parent_uuid": self.parent_uuid,
                "inventories": self.inventory_body(), "traits": sorted(self.traits),
                "aggregates": sorted(self.aggregates)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provider:
        return cls(name=data["name"], uuid=data["uuid"], parent_uuid=data.get("parent_uuid"),
                   inventories={rc: Inventory.from_fields(rc, fields)
                                for rc, fields in data.get("inventories", {}).items()},
                   traits=frozenset(data.get("traits", ())),
                   aggregates=frozenset(data.get("aggregates", ())))


@dataclass(frozen=True)
class ProviderTree:
    """One node's providers, root first, each parent before its children."""

    providers: tuple[Provider, ...]

    def __init__(self, providers: Iterable[Provider]) -> None:
        object.__setattr__(self, "providers", tuple(providers))
        if not self.providers:
            raise ValueError("a provider tree needs a root provider")
        seen_uuids: set[str] = set()
        seen_names: set[str] = set()
        for i, p in enumerate(self.providers):
            if p.uuid in seen_uuids or p.name in seen_names:
                raise ValueError(f"provider {p.name} ({p.uuid}) appears twice in the tree")
            if i == 0 and p.parent_uuid is not None:
                raise ValueError(f"root provider {p.name} cannot have a parent")
            if i > 0 and p.parent_uuid not in seen_uuids:
                raise ValueError(f"provider {p.name}'s parent must come before it in the tree")
            seen_uuids.add(p.uuid)
            seen_names.add(p.name)

    @property
    def root(self) -> Provider:
        return self.providers[0]

    def __iter__(self) -> Iterator[Provider]:
        return iter(self.providers)

    def __len__(self) -> int:
        return len(self.providers)

    def __contains__(self, provider_uuid: object) -> bool:
        return any(p.uuid == provider_uuid for p in self.providers)

    def get(self, provider_uuid: str) -> Provider:
        for p in self.providers:
            if p.uuid == provider_uuid:
                return p
        raise KeyError(provider_uuid)

    def by_name(self, name: str) -> Provider:
        for p in self.providers:
            if p.name == name:
                return p
        raise KeyError(name)

    def children(self, provider_uuid: str) -> list[Provider]:
        return [p for p in self.providers if p.parent_uuid == provider_uuid]

    def total(self, resource_class: str) -> int:
        """Inventory total of a class summed over the tree."""
        return sum(p.inventories[resource_class].total for p in self.providers
                   if resource_class in p.inventories)

    def as_dict(self) -> dict[str, Any]:
        return {"providers": [p.as_dict() for p in self.providers]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderTree:
        return cls(Provider.from_dict(p) for p in data["providers"])
