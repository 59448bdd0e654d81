"""Usage: what is allocated, summed per provider, or per project (and user, and consumer type)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.placement import schema as s
from stratus.placement.store.consumers import UNKNOWN_TYPE

# The two consumer_type filter values that are not type names.
ALL_TYPES = "all"


@dataclass(frozen=True)
class TypeUsage:
    """One consumer type's usage: amounts per class and how many consumers hold them."""

    usages: dict[str, int]
    consumer_count: int


def for_provider(conn: Connection, provider_id: int) -> dict[str, int]:
    """Usage of every class the provider has inventory of (0 where nothing is allocated)."""
    inv, a, rc = s.inventories, s.allocations, s.resource_classes
    used = (
        sa.select(a.c.resource_class_id, sa.func.sum(a.c.used).label("used"))
        .where(a.c.resource_provider_id == provider_id)
        .group_by(a.c.resource_class_id)
        .subquery()
    )
    rows = conn.execute(
        sa.select(rc.c.name, sa.func.coalesce(used.c.used, 0))
        .select_from(
            inv.join(rc, inv.c.resource_class_id == rc.c.id)
            .outerjoin(used, used.c.resource_class_id == inv.c.resource_class_id)
        )
        .where(inv.c.resource_provider_id == provider_id)
        .order_by(rc.c.name)
    )
    return {name: int(amount) for name, amount in rows}


def _owned_by(project_id: str, user_id: str | None) -> tuple[sa.FromClause, list[sa.ColumnElement]]:
    """Allocations joined to their consumers, filtered to a project (and user)."""
    a, c, p, u = s.allocations, s.consumers, s.projects, s.users
    source = a.join(c, a.c.consumer_id == c.c.id).join(p, c.c.project_id == p.c.id)
    where: list[sa.ColumnElement] = [p.c.external_id == project_id]
    if user_id:
        source = source.join(u, c.c.user_id == u.c.id)
        where.append(u.c.external_id == user_id)
    return source, where


def for_project(conn: Connection, project_id: str, user_id: str | None = None) -> dict[str, int]:
    """GET /usages before 1.38: totals per class across the project's (or user's) consumers."""
    a, rc = s.allocations, s.resource_classes
    source, where = _owned_by(project_id, user_id)
    rows = conn.execute(
        sa.select(rc.c.name, sa.func.sum(a.c.used))
        .select_from(source.join(rc, a.c.resource_class_id == rc.c.id))
        .where(*where)
        .group_by(rc.c.name)
        .order_by(rc.c.name)
    )
    return {name: int(amount) for name, amount in rows}


def by_consumer_type(conn: Connection, project_id: str, user_id: str | None = None,
                     consumer_type: str | None = None) -> dict[str, TypeUsage]:
    """GET /usages from 1.38: usage per consumer type, each with its count of consumers.

    ``consumer_type``: None groups by every type (consumers without one under
    "unknown"); "all" puts everything under one "all" key; "unknown" keeps only
    consumers without a type; any other value keeps only that type (and the
    filter is exact, so "ALL" is just a type nobody has).
    """
    a, c, rc, ct = s.allocations, s.consumers, s.resource_classes, s.consumer_types
    source, where = _owned_by(project_id, user_id)
    source = source.join(rc, a.c.resource_class_id == rc.c.id).outerjoin(
        ct, c.c.consumer_type_id == ct.c.id
    )
    if consumer_type == UNKNOWN_TYPE:
        where.append(c.c.consumer_type_id.is_(None))
    elif consumer_type not in (None, ALL_TYPES):
        where.append(ct.c.name == consumer_type)
    # Group by the raw type column and name the groups here: a computed
    # grouping expression with a bound parameter trips PostgreSQL.
    groups = [] if consumer_type == ALL_TYPES else [ct.c.name]

    def label(name: str | None) -> str:
        if consumer_type == ALL_TYPES:
            return ALL_TYPES
        return name or UNKNOWN_TYPE

    amounts: dict[str, dict[str, int]] = defaultdict(dict)
    for row in conn.execute(
        sa.select(*groups, rc.c.name.label("rc"), sa.func.sum(a.c.used).label("used"))
        .select_from(source).where(*where).group_by(*groups, rc.c.name)
    ):
        amounts[label(row[0] if groups else None)][row.rc] = int(row.used)
    # Counted separately: a consumer holding several classes counts once.
    counts = {
        label(row[0] if groups else None): int(row[-1])
        for row in conn.execute(
            sa.select(*groups, sa.func.count(sa.distinct(c.c.id)))
            .select_from(source).where(*where).group_by(*groups)
        )
    }
    return {name: TypeUsage(dict(sorted(amounts[name].items())), counts.get(name, 0))
            for name in sorted(amounts)}
