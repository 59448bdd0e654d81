"""The reshaper: replace inventories of several providers and allocations of several
consumers in one transaction (say, VCPU moving from a compute node to new NUMA children,
with the instances' allocations following it).

It goes in three steps, as Placement's does, because an inventory cannot be
removed while allocated and an allocation cannot be made without inventory:

1. *interim* inventories: each provider gets the union of what it has and what
   it will have (new values win), so both old and new allocations have a home;
2. the allocations are replaced (:func:`allocations.apply`, with its capacity
   checks against the interim inventories);
3. *final* inventories: exactly what was asked; removing a class that is still
   allocated fails with InventoryInUse.

Provider generations move as Placement's do: +1 for the interim step (when the
new inventory is not empty), +1 when allocations on the provider change, +1
for the final step; each move is a compare-and-swap against what this
transaction expects, so a concurrent writer makes the reshape fail, never mix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement.store import allocations, inventories
from stratus.placement.store.common import bump_generation, provider_row, record_change


class ProviderMissing(errors.BadRequest):
    code = errors.PROVIDER_NOT_FOUND


class ProviderGenerationMismatch(errors.ConcurrentUpdate):
    """The generation the client sent for a provider is not the current one."""


@dataclass(frozen=True)
class InventoryChange:
    """A provider's complete new inventory, and the generation the client last saw."""

    provider_uuid: str
    generation: int
    inventories: dict[str, dict[str, Any]]  # class -> fields


def reshape(conn: Connection, changes: Iterable[InventoryChange],
            writes: Iterable[allocations.ConsumerWrite],
            retries: int = allocations.DEFAULT_RETRIES) -> None:
    changes = list(changes)
    ids: dict[str, int] = {}
    for change in changes:
        try:
            row = provider_row(conn, change.provider_uuid)
        except errors.NotFound as exc:
            raise ProviderMissing(f"Resource provider {change.provider_uuid} in inventories "
                                  f"not found: {exc.detail}") from None
        if row.generation != change.generation:
            raise ProviderGenerationMismatch(
                f"resource provider generation conflict for provider {change.provider_uuid}: "
                f"actual: {row.generation}, given: {change.generation}"
            )
        ids[change.provider_uuid] = row.id
    in_lock_order = sorted(changes, key=lambda c: ids[c.provider_uuid])

    # The generation each provider should have when we make the final swap.
    expected = {ids[c.provider_uuid]: c.generation for c in changes}
    for change in in_lock_order:
        pid = ids[change.provider_uuid]
        if not change.inventories:
            continue  # the union would be what is there already
        expected[pid] = bump_generation(conn, pid, expected=change.generation)
        interim = {r.inventory.resource_class: r.inventory.as_dict()
                   for r in inventories.list_for(conn, pid)}
        interim.update(change.inventories)
        inventories.replace_all(conn, pid, interim)

    applied = allocations.apply(conn, writes, retries)
    for pid in applied.claimed & expected.keys():
        expected[pid] += 1

    for change in in_lock_order:
        pid = ids[change.provider_uuid]
        inventories.replace_all(conn, pid, change.inventories)
        bump_generation(conn, pid, expected=expected[pid])
    record_change(conn, applied.changed | set(ids.values()))
