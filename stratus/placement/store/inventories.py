"""Inventories: what each provider offers, one row per (provider, resource class).

These functions write rows only. The caller owns the provider generation
(compare-and-swap with ``common.bump_generation``) and calls
``common.record_change`` last, so a multi-step write such as the reshaper
can combine them in one transaction.

Placement's rules, kept here:

- an inventory must leave capacity (``reserved < total``; ``<=`` from 1.26);
- a class cannot be removed while allocations use it (409);
- shrinking capacity below current usage is allowed (logged): the provider
  is then over capacity and takes no new allocations until usage drops.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.model import (
    FIELDS,
    MAX_INT,
    SQL_SP_FLOAT_MAX,
    Inventory,
    capacity,
    capacity_acceptable,
)
from stratus.placement.store.common import now

LOG = logging.getLogger(__name__)

_inv = s.inventories


class InvalidCapacity(errors.BadRequest):
    """reserved (or the ratio) leaves no allocatable capacity."""


class UnknownResourceClass(errors.BadRequest):
    """An inventory names a class that does not exist."""


@dataclass(frozen=True)
class Record:
    """A stored inventory and when it was last written."""

    inventory: Inventory
    created_at: dt.datetime | None
    updated_at: dt.datetime | None

    @property
    def last_modified(self) -> dt.datetime | None:
        return self.updated_at or self.created_at


def _select() -> sa.Select:
    rc = s.resource_classes
    return sa.select(
        rc.c.name.label("resource_class"), *(_inv.c[f] for f in FIELDS),
        _inv.c.created_at, _inv.c.updated_at,
    ).select_from(_inv.join(rc, _inv.c.resource_class_id == rc.c.id))


def _record(row: sa.Row) -> Record:
    m = row._mapping
    inv = Inventory(
        resource_class=m["resource_class"],
        total=int(m["total"]), reserved=int(m["reserved"]), min_unit=int(m["min_unit"]),
        max_unit=int(m["max_unit"]), step_size=int(m["step_size"]),
        allocation_ratio=_ratio(m["allocation_ratio"]),
    )
    return Record(inv, m["created_at"], m["updated_at"])


def _ratio(stored: float) -> float:
    # The column is double precision on every backend, so the stored value is exact.
    return float(stored)


def list_for(conn: Connection, provider_id: int) -> list[Record]:
    rows = conn.execute(
        _select().where(_inv.c.resource_provider_id == provider_id)
        .order_by(_inv.c.resource_class_id)
    )
    return [_record(r) for r in rows]


def get(conn: Connection, provider_id: int, provider_uuid: str, resource_class: str) -> Record:
    row = conn.execute(
        _select().where(_inv.c.resource_provider_id == provider_id,
                        s.resource_classes.c.name == resource_class)
    ).first()
    if row is None:
        raise errors.NotFound(f"No inventory of class {resource_class} for {provider_uuid}")
    return _record(row)


# ---- validation ----------------------------------------------------------------------


_LOWEST = {"total": 1, "reserved": 0, "min_unit": 1, "max_unit": 1, "step_size": 1}


def _whole(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def build(resource_class: str, fields: Mapping[str, Any]) -> Inventory:
    """An Inventory from request fields: defaults filled, integral floats made ints.

    The HTTP schemas already enforce these bounds; checking again here keeps
    callers that build inventories themselves (the reshaper) from writing
    values the columns or the arithmetic cannot hold.
    """
    if "total" not in fields:
        raise errors.BadRequest(f"Bad inventory {resource_class}: 'total' is required.")
    inv = Inventory.from_fields(resource_class, fields)
    for name, lowest in _LOWEST.items():
        value = getattr(inv, name)
        if not _whole(value) or not lowest <= value <= MAX_INT:
            raise errors.BadRequest(
                f"Bad inventory {resource_class}: {name} must be an integer from {lowest} "
                f"to {MAX_INT}."
            )
    ratio = inv.allocation_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not (
        math.isfinite(ratio) and ratio <= SQL_SP_FLOAT_MAX
    ):
        raise errors.BadRequest(
            f"Bad inventory {resource_class}: allocation_ratio must be a finite number."
        )
    ints = {name: int(getattr(inv, name)) for name in _LOWEST}
    return Inventory(resource_class=resource_class, allocation_ratio=float(ratio), **ints)


def check_capacity(
    inventories: Iterable[Inventory], provider_uuid: str, reserved_may_equal_total: bool
) -> None:
    """Refuse inventories that leave no capacity (InvalidCapacity, a 400)."""
    for inv in inventories:
        if not math.isfinite(inv.allocation_ratio):
            raise errors.BadRequest(
                f"Invalid inventory for '{inv.resource_class}' on resource provider "
                f"'{provider_uuid}'. allocation_ratio must be a finite number."
            )
        if not capacity_acceptable(inv, reserved_may_equal_total):
            relation = "greater than" if reserved_may_equal_total else (
                "greater than or equal to"
            )
            raise InvalidCapacity(
                f"Invalid inventory for '{inv.resource_class}' on resource provider "
                f"'{provider_uuid}'. The reserved value is {relation} total."
            )


def _class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    wanted = set(names)
    if not wanted:
        return {}
    rc = s.resource_classes
    found = {n: int(i) for n, i in conn.execute(
        sa.select(rc.c.name, rc.c.id).where(rc.c.name.in_(wanted)))}
    missing = sorted(wanted - found.keys())
    if missing:
        raise UnknownResourceClass(f"No such resource class {missing[0]}.")
    return found


def _provider_uuid(conn: Connection, provider_id: int) -> str:
    rp = s.resource_providers
    return str(conn.execute(sa.select(rp.c.uuid).where(rp.c.id == provider_id)).scalar_one())


def _values(inv: Inventory) -> dict[str, Any]:
    return {f: getattr(inv, f) for f in FIELDS}


def _usage(conn: Connection, provider_id: int, rc_ids: Iterable[int]) -> dict[int, int]:
    """What is allocated of these classes on the provider, where anything is
    (the running totals, which every allocation write keeps)."""
    rows = conn.execute(
        sa.select(_inv.c.resource_class_id, _inv.c.used)
        .where(_inv.c.resource_provider_id == provider_id,
               _inv.c.resource_class_id.in_(list(rc_ids)), _inv.c.used != 0)
        .order_by(_inv.c.resource_class_id)
    )
    return {int(rc_id): int(used) for rc_id, used in rows}


def _refuse_in_use(conn: Connection, provider_id: int, rc_ids: dict[str, int]) -> None:
    used = _usage(conn, provider_id, rc_ids.values())
    if used:
        by_id = {i: n for n, i in rc_ids.items()}
        names = ", ".join(by_id[i] for i in used)
        raise errors.InventoryInUse(
            f"Inventory for '{names}' on resource provider "
            f"'{_provider_uuid(conn, provider_id)}' in use."
        )


def _warn_over_capacity(conn: Connection, provider_id: int,
                        invs: dict[int, Inventory]) -> None:
    for rc_id, used in _usage(conn, provider_id, invs).items():
        if used > capacity(invs[rc_id]):
            LOG.warning("Resource provider %s is now over-capacity for %s",
                        _provider_uuid(conn, provider_id), invs[rc_id].resource_class)


# ---- writes ---------------------------------------------------------------------------


def add(conn: Connection, provider_id: int, inv: Inventory) -> None:
    """Add one class's inventory; Conflict (concurrent_update) if it is already there."""
    rc_id = _class_ids(conn, [inv.resource_class])[inv.resource_class]
    exists = conn.execute(
        sa.select(_inv.c.id).where(_inv.c.resource_provider_id == provider_id,
                                   _inv.c.resource_class_id == rc_id)
    ).first()
    duplicate = errors.ConcurrentUpdate(
        f"Update conflict: inventory of class {inv.resource_class} already exists on "
        f"resource provider {_provider_uuid(conn, provider_id)}."
    )
    if exists is not None:
        raise duplicate
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(_inv).values(
                resource_provider_id=provider_id, resource_class_id=rc_id,
                created_at=now(), **_values(inv)))
    except sa.exc.IntegrityError:
        raise duplicate from None


def update(conn: Connection, provider_id: int, inv: Inventory) -> None:
    """Replace one existing class's inventory (NotFound for an unknown class,
    BadRequest if the provider has none of it). Shrinking below usage is allowed."""
    try:
        rc_id = _class_ids(conn, [inv.resource_class])[inv.resource_class]
    except UnknownResourceClass as exc:
        raise errors.NotFound(exc.detail) from None
    result = conn.execute(
        sa.update(_inv).where(_inv.c.resource_provider_id == provider_id,
                              _inv.c.resource_class_id == rc_id)
        .values(updated_at=now(), **_values(inv))
    )
    if result.rowcount == 0:
        raise errors.BadRequest(f"No inventory of class {inv.resource_class} found.")
    _warn_over_capacity(conn, provider_id, {rc_id: inv})


def delete(conn: Connection, provider_id: int, resource_class: str) -> None:
    """Remove one class's inventory; InventoryInUse while allocations use it."""
    try:
        rc_id = _class_ids(conn, [resource_class])[resource_class]
    except UnknownResourceClass as exc:
        raise errors.NotFound(exc.detail) from None
    _refuse_in_use(conn, provider_id, {resource_class: rc_id})
    result = conn.execute(
        sa.delete(_inv).where(_inv.c.resource_provider_id == provider_id,
                              _inv.c.resource_class_id == rc_id)
    )
    if result.rowcount == 0:
        raise errors.NotFound(f"No inventory of class {resource_class} found for delete")


def replace_all(
    conn: Connection,
    provider_id: int,
    inventories: dict[str, dict],
    reserved_may_equal_total: bool = True,
) -> None:
    """Make the provider's inventory exactly ``inventories`` (class -> fields).

    Missing optional fields take Placement's defaults. Raises InvalidCapacity
    or UnknownResourceClass (400) and InventoryInUse (409) when a class to be
    removed has allocations. Does not touch the generation or the change log.
    """
    wanted = {rc: build(rc, fields) for rc, fields in inventories.items()}
    check_capacity(wanted.values(), _provider_uuid(conn, provider_id), reserved_may_equal_total)
    rc_ids = _class_ids(conn, wanted)
    current = {
        int(rc_id): name for rc_id, name in conn.execute(
            sa.select(_inv.c.resource_class_id, s.resource_classes.c.name)
            .select_from(_inv.join(s.resource_classes,
                                   _inv.c.resource_class_id == s.resource_classes.c.id))
            .where(_inv.c.resource_provider_id == provider_id)
        )
    }
    gone = {name: rc_id for rc_id, name in current.items() if name not in wanted}
    if gone:
        _refuse_in_use(conn, provider_id, gone)
        conn.execute(sa.delete(_inv).where(_inv.c.resource_provider_id == provider_id,
                                           _inv.c.resource_class_id.in_(gone.values())))
    stamp = now()
    new_rows = [
        {"resource_provider_id": provider_id, "resource_class_id": rc_ids[rc],
         "created_at": stamp, **_values(inv)}
        for rc, inv in wanted.items() if rc_ids[rc] not in current
    ]
    if new_rows:
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(_inv), new_rows)
        except sa.exc.IntegrityError:
            # Another writer added one of these classes since we looked; only
            # possible if the caller did not lock the provider (bump) first.
            raise errors.ConcurrentUpdate(
                "update conflict: another process changed this provider's inventory. "
                "Please retry."
            ) from None
    kept = {rc_ids[rc]: inv for rc, inv in wanted.items() if rc_ids[rc] in current}
    for rc_id, inv in kept.items():
        conn.execute(
            sa.update(_inv).where(_inv.c.resource_provider_id == provider_id,
                                  _inv.c.resource_class_id == rc_id)
            .values(updated_at=stamp, **_values(inv))
        )
    if kept:
        _warn_over_capacity(conn, provider_id, kept)
