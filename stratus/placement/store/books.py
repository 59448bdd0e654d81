"""Checking, and repairing, the running usage totals against the allocations.

``inventories.used`` is the sum of the allocations against each inventory, kept
by every allocation write (``allocations.shift_usage``). Nothing in Stratus
writes one without the other; these are for an operator who wants to see that
it holds (after restoring a backup, or after editing the database by hand), and
for putting it right.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import schema as s
from stratus.placement.store.common import record_change


@dataclass(frozen=True)
class Drift:
    provider_uuid: str
    resource_class: str
    kept: int        # inventories.used
    allocated: int   # what the allocations add up to


def _sums() -> sa.Select:
    a = s.allocations
    return (sa.select(a.c.resource_provider_id.label("rp"), a.c.resource_class_id.label("rc"),
                      sa.func.sum(a.c.used).label("total"))
            .group_by(a.c.resource_provider_id, a.c.resource_class_id))


Key = tuple[int, int]   # (provider id, resource class id)


def drift(conn: Connection) -> tuple[list[Drift], list[Drift]]:
    """Totals that differ from their allocations, and allocations with no inventory row."""
    wrong, orphans = _drift(conn, lock=False)
    return [d for _key, d in wrong], orphans


def _drift(conn: Connection, lock: bool) -> tuple[list[tuple[Key, Drift]], list[Drift]]:
    """:func:`drift`, each differing total with its (provider id, class id).

    With ``lock`` the inventory rows are locked first: a claim or delete that has
    written allocations but not yet moved the totals then waits, and its relative
    move lands on top of what :func:`repair` writes, so the repair loses nothing.
    """
    inv, rp, rc = s.inventories, s.resource_providers, s.resource_classes
    kept_q = sa.select(inv.c.resource_provider_id, inv.c.resource_class_id, inv.c.used)
    if lock:
        kept_q = kept_q.with_for_update()
    kept = {(p, c): int(u) for p, c, u in conn.execute(kept_q)}
    allocated = {(p, c): int(t) for p, c, t in conn.execute(_sums())}
    uuids = dict(conn.execute(sa.select(rp.c.id, rp.c.uuid)).tuples().all())
    names = dict(conn.execute(sa.select(rc.c.id, rc.c.name)).tuples().all())

    def row(key: Key, kept_value: int, allocated_value: int) -> Drift:
        return Drift(uuids.get(key[0], f"#{key[0]}"), names.get(key[1], f"#{key[1]}"),
                     kept_value, allocated_value)

    wrong = [(k, row(k, v, allocated.get(k, 0))) for k, v in sorted(kept.items())
             if v != allocated.get(k, 0)]
    orphans = [row(k, 0, v) for k, v in sorted(allocated.items()) if k not in kept]
    return wrong, orphans


def repair(conn: Connection) -> tuple[list[Drift], list[Drift]]:
    """Set every differing total to what its allocations add up to; what was changed,
    and the allocations with no inventory row, which are left for the operator (there
    is no total to correct; the inventory or the allocations have to be put back)."""
    wrong, orphans = _drift(conn, lock=True)
    if not wrong:
        return [], orphans
    inv = s.inventories
    for (provider_id, class_id), d in wrong:
        conn.execute(sa.update(inv).where(inv.c.resource_provider_id == provider_id,
                                          inv.c.resource_class_id == class_id)
                     .values(used=d.allocated))
    # Candidate indexes reload these providers.
    record_change(conn, {provider_id for (provider_id, _class), _d in wrong})
    return [d for _key, d in wrong], orphans
