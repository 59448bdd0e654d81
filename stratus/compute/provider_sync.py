"""Make Placement's copy of a provider match what a compute wants it to be.

Each part (inventories, traits, aggregates) converges the same way: read it with
the provider's generation, compute the wanted value from what is there, write
it with that generation if it differs; a ``placement.concurrent_update`` (someone
else wrote in between) means read again and retry, a few times, then
:class:`SyncConflict`. Nothing is written when nothing differs, so a steady
host does not bump generations on every pass.

Traits and aggregates are merged, not replaced: an operator's own traits and
aggregates on a compute node survive. Only the names the compute manages (what
it reported before, plus ``COMPUTE_STATUS_DISABLED`` on a root) are removed when
no longer wanted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from stratus.compute.provider_tree import Provider
from stratus.placement.client import ConcurrentUpdate, Conflict, PlacementClient

LOG = logging.getLogger(__name__)
RETRIES = 5
T = TypeVar("T")


class SyncConflict(Exception):
    """A provider's generation kept moving: another writer won every retry."""

    def __init__(self, what: str, uuid: str, attempts: int) -> None:
        super().__init__(what, uuid, attempts)
        self.what, self.uuid, self.attempts = what, uuid, attempts

    def __str__(self) -> str:
        return (f"{self.what} of provider {self.uuid}: generation changed on each of "
                f"{self.attempts} attempts")


@dataclass(frozen=True)
class Step:
    """Where a converge left the provider: its generation, and whether nobody else wrote
    to it since the generation we expected (so a caller may trust that generation)."""

    generation: int
    undisturbed: bool
    changed: bool


def merged(current: Iterable[str], wanted: Iterable[str], managed: Iterable[str]) -> set[str]:
    """``current`` with the managed names that are no longer wanted removed, plus ``wanted``."""
    wanted = set(wanted)
    return (set(current) - (set(managed) - wanted)) | wanted


class PlacementSync:
    """Converge providers through a :class:`PlacementClient` (one per compute service)."""

    def __init__(self, client: PlacementClient, retries: int = RETRIES) -> None:
        self.client = client
        self.retries = retries
        self._known_classes: set[str] = set()
        self._known_traits: set[str] = set()

    def ensure_provider(self, provider: Provider) -> int:
        """Create the provider if Placement lacks it; its current generation."""
        found = self.client.get_provider(provider.uuid)
        if found is not None:
            return int(found["generation"])
        try:
            created = self.client.create_provider(provider.uuid, provider.name,
                                                  provider.parent_uuid)
        except Conflict:
            # Created by a concurrent pass between our read and write; a name taken by
            # another uuid is a real conflict and the re-read says so.
            found = self.client.get_provider(provider.uuid)
            if found is None:
                raise
            return int(found["generation"])
        LOG.info("created provider %s (%s)", provider.name, provider.uuid)
        return int(created["generation"])

    def inventories(self, uuid: str, body: Mapping[str, Mapping[str, Any]],
                    expected: int | None = None) -> Step:
        wanted = {rc: dict(fields) for rc, fields in body.items()}
        for rc in wanted:
            self._ensure_class(rc)
        return self._converge(
            "inventories", uuid, expected, lambda: self.client.get_inventories(uuid),
            lambda _current: wanted,
            lambda gen, value: self.client.set_inventories(uuid, gen, value))

    def traits(self, uuid: str, wanted: Iterable[str], managed: Iterable[str] = (),
               expected: int | None = None) -> Step:
        wanted, managed = set(wanted), set(managed)
        for trait in wanted:
            self._ensure_trait(trait)
        return self._converge(
            "traits", uuid, expected, lambda: self.client.get_traits(uuid),
            lambda current: merged(current, wanted, managed),
            lambda gen, value: self.client.set_traits(uuid, gen, value))

    def aggregates(self, uuid: str, wanted: Iterable[str], managed: Iterable[str] = (),
                   expected: int | None = None) -> Step:
        wanted, managed = set(wanted), set(managed)
        return self._converge(
            "aggregates", uuid, expected, lambda: self.client.get_aggregates(uuid),
            lambda current: merged(current, wanted, managed),
            lambda gen, value: self.client.set_aggregates(uuid, gen, value))

    def delete_missing(self, root_uuid: str, keep: Iterable[str]) -> list[str]:
        """Delete providers of the tree that are not in ``keep``, leaves first."""
        keep = set(keep)
        listed = self.client.providers_in_tree(root_uuid)
        parent = {p["uuid"]: p.get("parent_provider_uuid") for p in listed}

        def depth(uuid: str) -> int:
            n, above = 0, parent.get(uuid)
            while above:
                n, above = n + 1, parent.get(above)
            return n

        gone = sorted((u for u in parent if u not in keep), key=depth, reverse=True)
        for uuid in gone:
            self.client.delete_provider(uuid)
            LOG.info("deleted provider %s: no longer in the driver's tree", uuid)
        return gone

    # -- helpers -----------------------------------------------------------------

    def _ensure_class(self, name: str) -> None:
        if name.startswith("CUSTOM_") and name not in self._known_classes:
            self.client.ensure_resource_class(name)
            self._known_classes.add(name)

    def _ensure_trait(self, name: str) -> None:
        if name.startswith("CUSTOM_") and name not in self._known_traits:
            self.client.ensure_trait(name)
            self._known_traits.add(name)

    def _converge(self, what: str, uuid: str, expected: int | None,
                  read: Callable[[], tuple[T, int]], want: Callable[[T], T],
                  write: Callable[[int, T], int]) -> Step:
        undisturbed = expected is not None
        for _ in range(self.retries):
            current, generation = read()
            undisturbed = undisturbed and generation == expected
            target = want(current)
            if target == current:
                return Step(generation, undisturbed, changed=False)
            try:
                return Step(write(generation, target), undisturbed, changed=True)
            except ConcurrentUpdate:
                LOG.debug("%s of provider %s: generation %s is stale, re-reading",
                          what, uuid, generation)
                undisturbed = False
        raise SyncConflict(what, uuid, self.retries)
