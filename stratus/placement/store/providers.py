"""Resource providers: create, read, rename, re-parent, delete, list with filters.

A provider is returned as a plain dict::

    {"id", "uuid", "name", "generation", "parent_provider_id", "root_provider_id",
     "parent_provider_uuid", "root_provider_uuid", "created_at", "updated_at"}

Trees: every provider carries its root's id, so a whole tree is one indexed
lookup. Re-parenting rewrites the root id of the moved subtree in the same
transaction, then re-checks the trees it touched once it holds the change
counter's lock (which every write takes last): two concurrent re-parentings
that together would loop a tree or strand a root id cannot both commit.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement import schema as s
from stratus.placement.model import MAX_INT
from stratus.placement.store.common import now, record_change

LOG = logging.getLogger(__name__)

_rp = s.resource_providers
KEEP: Any = object()
"""Sentinel for ``update(parent_uuid=KEEP)``: leave the parent as it is."""


def _select() -> sa.Select:
    root = _rp.alias("root")
    parent = _rp.alias("parent")
    return sa.select(
        _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation,
        _rp.c.parent_provider_id, _rp.c.root_provider_id,
        parent.c.uuid.label("parent_provider_uuid"),
        root.c.uuid.label("root_provider_uuid"),
        _rp.c.created_at, _rp.c.updated_at,
    ).select_from(
        _rp.outerjoin(root, _rp.c.root_provider_id == root.c.id)
        .outerjoin(parent, _rp.c.parent_provider_id == parent.c.id)
    )


def _as_dict(row: sa.Row) -> dict[str, Any]:
    return dict(row._mapping)


def find(conn: Connection, uuid: str) -> dict[str, Any] | None:
    row = conn.execute(_select().where(_rp.c.uuid == uuid)).first()
    return None if row is None else _as_dict(row)


def get(conn: Connection, uuid: str) -> dict[str, Any]:
    """The provider with this uuid, or NotFound (any string: a malformed uuid is just absent)."""
    found = find(conn, uuid)
    if found is None:
        raise errors.NotFound(f"No resource provider with uuid {uuid} found")
    return found


def get_by_id(conn: Connection, provider_id: int) -> dict[str, Any]:
    return _as_dict(conn.execute(_select().where(_rp.c.id == provider_id)).one())


# ---- create -----------------------------------------------------------------------


def _duplicate(conn: Connection, uuid: str, name: str) -> errors.Conflict | None:
    if conn.execute(sa.select(_rp.c.id).where(_rp.c.uuid == uuid)).first() is not None:
        return errors.Conflict(
            f"Conflicting resource provider uuid: {uuid} already exists.", errors.DUPLICATE_NAME
        )
    if conn.execute(sa.select(_rp.c.id).where(_rp.c.name == name)).first() is not None:
        return errors.Conflict(
            f"Conflicting resource provider name: {name} already exists.", errors.DUPLICATE_NAME
        )
    return None


def create(
    conn: Connection, uuid: str | None, name: str, parent_uuid: str | None = None
) -> dict[str, Any]:
    """Create a provider (a root, or a child of ``parent_uuid``) and return it.

    ``uuid`` None means generate one. Duplicate uuid or name: Conflict with
    ``placement.duplicate_name``; a missing or self parent: BadRequest.
    """
    uuid = uuid or str(uuidlib.uuid4())

    def refuse(reason: str) -> errors.BadRequest:
        return errors.BadRequest(
            f'Unable to create resource provider "{name}", {uuid}: '
            f"Object action create failed because: {reason}"
        )

    if not name:
        raise refuse("name is required")
    parent: dict[str, Any] | None = None
    if parent_uuid is not None:
        if parent_uuid == uuid:
            raise refuse(
                "parent provider UUID cannot be same as UUID. Please set parent provider "
                "UUID to None if there is no parent."
            )
        parent = find(conn, parent_uuid)
        if parent is None:
            raise refuse("parent provider UUID does not exist.")
    duplicate = _duplicate(conn, uuid, name)
    if duplicate is not None:
        raise duplicate
    stamp = now()
    values: dict[str, Any] = {"uuid": uuid, "name": name, "generation": 0, "created_at": stamp}
    if parent is not None:
        values["parent_provider_id"] = parent["id"]
        values["root_provider_id"] = parent["root_provider_id"]
    try:
        with conn.begin_nested():
            new_id = int(conn.execute(sa.insert(_rp).values(**values)).inserted_primary_key[0])
    except sa.exc.IntegrityError:
        # Lost a race: someone took the uuid or name, or deleted the parent.
        duplicate = _duplicate(conn, uuid, name)
        raise (duplicate or refuse("parent provider UUID does not exist.")) from None
    if parent is None:
        conn.execute(sa.update(_rp).where(_rp.c.id == new_id).values(root_provider_id=new_id))
    record_change(conn, [new_id] + ([parent["id"]] if parent else []))
    if parent is not None:
        _check_trees(conn, {parent["root_provider_id"]}, new_id)
    return get_by_id(conn, new_id)


# ---- update -----------------------------------------------------------------------


def _subtree(conn: Connection, provider: dict[str, Any]) -> set[int]:
    """Ids of ``provider`` and every provider below it."""
    rows = conn.execute(
        sa.select(_rp.c.id, _rp.c.parent_provider_id).where(
            _rp.c.root_provider_id == provider["root_provider_id"]
        )
    ).all()
    children: dict[int, list[int]] = {}
    for child_id, parent_id in rows:
        if parent_id is not None:
            children.setdefault(parent_id, []).append(child_id)
    found: set[int] = set()
    todo = [provider["id"]]
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found.add(current)
        todo.extend(children.get(current, []))
    return found


def update(
    conn: Connection,
    uuid: str,
    name: str,
    parent_uuid: str | None = KEEP,
    allow_reparenting: bool = False,
) -> dict[str, Any]:
    """Rename a provider and/or change its parent; return it updated.

    Without ``allow_reparenting`` (before 1.37) a parent can only be set on a
    provider that has none; with it, a provider may move anywhere that does
    not make a loop, or become a root (``parent_uuid=None``). The generation
    does not change: it guards inventory, allocations, traits and aggregates.
    """
    provider = get(conn, uuid)

    def refuse(action: str, reason: str) -> errors.BadRequest:
        return errors.BadRequest(
            f"Unable to save resource provider {uuid}: "
            f"Object action {action} failed because: {reason}"
        )

    parent_id = provider["parent_provider_id"]
    root_id = provider["root_provider_id"]
    moved: set[int] = set()
    old_parent_id = parent_id
    if parent_uuid is not KEEP and parent_uuid is not None:
        parent = find(conn, parent_uuid)
        if parent is None:
            raise refuse("create", "parent provider UUID does not exist.")
        if parent_id is not None and parent_id != parent["id"] and not allow_reparenting:
            raise refuse("update", "re-parenting a provider is not currently allowed.")
        moved = _subtree(conn, provider)
        if parent["id"] in moved:
            raise refuse("update", "creating loop in the provider tree is not allowed.")
        parent_id, root_id = parent["id"], parent["root_provider_id"]
    elif parent_uuid is None and parent_id is not None:
        if not allow_reparenting:
            raise refuse("update", "un-parenting a provider is not currently allowed.")
        moved = _subtree(conn, provider)
        parent_id, root_id = None, provider["id"]

    if name != provider["name"] and conn.execute(
        sa.select(_rp.c.id).where(_rp.c.name == name, _rp.c.id != provider["id"])
    ).first() is not None:
        raise errors.Conflict(
            f"Conflicting resource provider {name} already exists.", errors.DUPLICATE_NAME
        )
    try:
        with conn.begin_nested():
            conn.execute(
                sa.update(_rp).where(_rp.c.id == provider["id"]).values(
                    name=name, parent_provider_id=parent_id, root_provider_id=root_id,
                    updated_at=now(),
                )
            )
    except sa.exc.IntegrityError:
        if conn.execute(sa.select(_rp.c.id).where(_rp.c.name == name)).first() is not None:
            raise errors.Conflict(
                f"Conflicting resource provider {name} already exists.", errors.DUPLICATE_NAME
            ) from None
        raise refuse("update", "parent provider UUID does not exist.") from None
    if moved:
        conn.execute(sa.update(_rp).where(_rp.c.id.in_(moved)).values(root_provider_id=root_id))
    touched = moved | {provider["id"]} | {p for p in (old_parent_id, parent_id) if p is not None}
    record_change(conn, touched)
    if moved:
        _check_trees(conn, {provider["root_provider_id"], root_id}, provider["id"])
    return get_by_id(conn, provider["id"])


def _check_trees(conn: Connection, root_ids: Iterable[int | None], start_id: int) -> None:
    """Refuse to commit a tree that concurrent writers left inconsistent.

    Runs after ``record_change``: the counter lock is held, so every tree
    change committed before ours is visible and none can commit meanwhile.
    Each provider in the trees must share its parent's root, each root must be
    parentless and its own root, and ``start_id`` must reach its root upward.
    """
    roots = {r for r in root_ids if r is not None}
    rows = {
        r.id: r for r in conn.execute(
            sa.select(_rp.c.id, _rp.c.parent_provider_id, _rp.c.root_provider_id).where(
                _rp.c.root_provider_id.in_(roots)
            )
        )
    }
    missing = {r.parent_provider_id for r in rows.values()} - rows.keys() - {None}
    if missing:
        for r in conn.execute(
            sa.select(_rp.c.id, _rp.c.parent_provider_id, _rp.c.root_provider_id).where(
                _rp.c.id.in_(missing)
            )
        ):
            rows[r.id] = r
    consistent = all(
        (r.root_provider_id == r.id) if r.parent_provider_id is None
        else (r.parent_provider_id in rows
              and rows[r.parent_provider_id].root_provider_id == r.root_provider_id)
        for r in rows.values()
    )
    seen: set[int] = set()
    current: int | None = start_id
    while consistent and current is not None and current in rows:
        if current in seen:
            consistent = False
            break
        seen.add(current)
        parent = rows[current].parent_provider_id
        if parent is None:
            consistent = current == rows[start_id].root_provider_id
        current = parent
    if not consistent:
        LOG.warning("concurrent tree change around provider id %s; refusing to commit", start_id)
        raise errors.ConcurrentUpdate(
            "Another process changed this provider tree at the same time. Please retry."
        )


# ---- delete -----------------------------------------------------------------------


def _has_children(conn: Connection, provider_id: int) -> bool:
    return conn.execute(
        sa.select(_rp.c.id).where(_rp.c.parent_provider_id == provider_id).limit(1)
    ).first() is not None


def _has_allocations(conn: Connection, provider_id: int) -> bool:
    alloc = s.allocations
    return conn.execute(
        sa.select(alloc.c.id).where(alloc.c.resource_provider_id == provider_id).limit(1)
    ).first() is not None


def delete(conn: Connection, uuid: str) -> None:
    """Delete a provider with its inventory, traits and aggregate links.

    Refused (409) while it has child providers or any allocation.
    """
    provider = find(conn, uuid)
    if provider is None:
        raise errors.NotFound(f"No resource provider with uuid {uuid} found for delete")
    pid = provider["id"]
    parent_refusal = errors.Conflict(
        f"Unable to delete parent resource provider {uuid}: It has child resource providers.",
        errors.PROVIDER_CANNOT_DELETE_PARENT,
    )
    in_use = errors.Conflict(
        f"Unable to delete resource provider {uuid}: Resource provider has allocations.",
        errors.PROVIDER_IN_USE,
    )
    if _has_children(conn, pid):
        raise parent_refusal
    if _has_allocations(conn, pid):
        raise in_use
    for table in (s.inventories, s.resource_provider_traits, s.resource_provider_aggregates):
        conn.execute(sa.delete(table).where(table.c.resource_provider_id == pid))
    try:
        with conn.begin_nested():
            # The self-reference would block the delete on some backends.
            conn.execute(sa.update(_rp).where(_rp.c.id == pid).values(root_provider_id=None))
            conn.execute(sa.delete(_rp).where(_rp.c.id == pid))
    except sa.exc.IntegrityError:
        # A child or an allocation arrived after the checks above.
        raise (in_use if _has_allocations(conn, pid) else parent_refusal) from None
    parent_id = provider["parent_provider_id"]
    record_change(conn, [pid] + ([parent_id] if parent_id is not None else []))


# ---- list -------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """GET /resource_providers filters, already parsed.

    ``required_traits`` and ``member_of`` are lists of any-of sets, ANDed
    together; the ``forbidden_*`` sets exclude a provider having any of them.
    """

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    required_traits: list[frozenset[str]] = field(default_factory=list)
    forbidden_traits: frozenset[str] = frozenset()
    member_of: list[frozenset[str]] = field(default_factory=list)
    forbidden_aggregates: frozenset[str] = frozenset()
    resources: dict[str, int] = field(default_factory=dict)


def _ids_by_name(conn: Connection, table: sa.Table, names: Iterable[str]) -> dict[str, int]:
    wanted = set(names)
    rows = conn.execute(sa.select(table.c.name, table.c.id).where(table.c.name.in_(wanted)))
    return {name: int(i) for name, i in rows}


def _trait_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    names = set(names)
    found = _ids_by_name(conn, s.traits, names)
    missing = sorted(names - found.keys())
    if missing:
        raise errors.BadRequest(
            f'Invalid trait(s) in "required" parameter: No such trait(s): {", ".join(missing)}.'
        )
    return found


def _with_trait(trait_ids: Iterable[int]) -> sa.ColumnElement[bool]:
    rpt = s.resource_provider_traits
    return _rp.c.id.in_(
        sa.select(rpt.c.resource_provider_id).where(rpt.c.trait_id.in_(list(trait_ids)))
    )


def _in_aggregate(agg_uuids: Iterable[str]) -> sa.ColumnElement[bool]:
    rpa, agg = s.resource_provider_aggregates, s.placement_aggregates
    return _rp.c.id.in_(
        sa.select(rpa.c.resource_provider_id)
        .select_from(rpa.join(agg, rpa.c.aggregate_id == agg.c.id))
        .where(agg.c.uuid.in_(list(agg_uuids)))
    )


def _with_capacity(rc_id: int, amount: int) -> sa.ColumnElement[bool]:
    """Providers whose inventory of the class can take one more allocation of ``amount``.

    The same rule as ``model.fits`` and ``model.amount_allowed``, in SQL.
    """
    inv, alloc = s.inventories, s.allocations
    usage = (
        sa.select(alloc.c.resource_provider_id, sa.func.sum(alloc.c.used).label("used"))
        .where(alloc.c.resource_class_id == rc_id)
        .group_by(alloc.c.resource_provider_id)
        .subquery("usage")
    )
    wanted = sa.literal(amount, sa.Integer)
    return _rp.c.id.in_(
        sa.select(inv.c.resource_provider_id)
        .select_from(inv.outerjoin(usage, inv.c.resource_provider_id
                                   == usage.c.resource_provider_id))
        .where(
            inv.c.resource_class_id == rc_id,
            sa.func.coalesce(usage.c.used, 0) + wanted
            <= (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio,
            inv.c.min_unit <= wanted,
            inv.c.max_unit >= wanted,
            wanted % inv.c.step_size == 0,
        )
    )


def _matches_any(conn: Connection, clauses: list[sa.ColumnElement[bool]]) -> bool:
    return conn.execute(sa.select(_rp.c.id).where(*clauses).limit(1)).first() is not None


def list_filtered(conn: Connection, f: Filters) -> list[dict[str, Any]]:
    """Providers matching every filter, in creation order.

    Unknown traits or classes are a 400, except where Placement had already
    found that nothing matches (a missing ``in_tree`` provider, required
    traits or aggregates nobody has): then the answer is simply empty.
    """
    q = _select().order_by(_rp.c.id)
    if f.name:
        q = q.where(_rp.c.name == f.name)
    if f.uuid:
        q = q.where(_rp.c.uuid == f.uuid)
    if f.in_tree:
        tree = find(conn, f.in_tree)
        if tree is None:
            return []
        q = q.where(_rp.c.root_provider_id == tree["root_provider_id"])
    if f.required_traits:
        ids = _trait_ids(conn, frozenset().union(*f.required_traits))
        clauses = [_with_trait(ids[t] for t in group) for group in f.required_traits]
        if not _matches_any(conn, clauses):
            return []
        q = q.where(*clauses)
    if f.forbidden_traits:
        q = q.where(~_with_trait(_trait_ids(conn, f.forbidden_traits).values()))
    if f.member_of:
        clauses = [_in_aggregate(group) for group in f.member_of]
        if not _matches_any(conn, clauses):
            return []
        q = q.where(*clauses)
    if f.forbidden_aggregates:
        q = q.where(~_in_aggregate(f.forbidden_aggregates))
    if f.resources:
        rc_ids = _ids_by_name(conn, s.resource_classes, f.resources)
        missing = sorted(f.resources.keys() - rc_ids.keys())
        if missing:
            raise errors.BadRequest(
                "Invalid resource class in resources parameter: "
                f"No such resource class {missing[0]}."
            )
        if any(amount > MAX_INT for amount in f.resources.values()):
            return []  # above any max_unit: nothing can take it
        q = q.where(*(_with_capacity(rc_ids[rc], n) for rc, n in f.resources.items()))
    return [_as_dict(row) for row in conn.execute(q)]


def root_name(conn: Connection, provider: dict[str, Any]) -> str:
    """The name of the root of ``provider``'s tree (its own name if it is a root)."""
    if provider["root_provider_id"] in (None, provider["id"]):
        return str(provider["name"])
    name = conn.execute(sa.select(_rp.c.name).where(
        _rp.c.id == provider["root_provider_id"])).scalar_one()
    return str(name)
