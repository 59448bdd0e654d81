"""What a NoValidHost explanation is made from, read off the request and the cloud view.

Small pure helpers for the scheduler: what each request group asks for, and what
each aggregate the request filters forbade stands for (a disabled cell, another
zone, projects'), so ``explanation.explain`` can say it in words.
"""

from __future__ import annotations

from collections.abc import Iterable

from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.cells.mappings import CellMapping
from stratus.scheduler.explanation import Category, Meaning
from stratus.scheduler.request import PlacementQuery, RequestSpec
from stratus.scheduler.request_filters import FilterContext


def asked(query: PlacementQuery) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """Per group suffix, its resources; and who asked for each group not the flavor's."""
    resources = {suffix: dict(group.resources) for suffix, group in query.groups.items()
                 if group.resources or not suffix}
    names = {suffix: str(group.requester()) for suffix, group in query.groups.items()
             if group.requester_id}
    return resources, names


def meanings(ctx: FilterContext, cells: Iterable[CellMapping], spec: RequestSpec
             ) -> dict[str, Meaning]:
    """Aggregate uuid -> what being in it means for this request (why it is forbidden)."""
    out: dict[str, Meaning] = {}
    for aggs in ctx.az_aggregates.values():   # the default zone forbids the others
        for agg in aggs:
            out[agg] = Meaning("in another availability zone")
    for agg, projects in ctx.tenant_aggregates.items():
        if spec.project_id not in projects:
            out[agg] = Meaning("in aggregates reserved for other projects")
    for cell in cells:
        agg = cell_aggregate_uuid(cell.uuid)
        if agg in ctx.disabled_cell_aggregates:
            out[agg] = Meaning(f"in disabled cell {cell.name or cell.uuid}", Category.DISABLED)
    return out


def outside(spec: RequestSpec) -> str:
    """What ``not_in_aggregate`` means for this request."""
    if spec.availability_zone:
        return f"outside availability zone {spec.availability_zone}"
    if spec.requested_cell:
        return f"outside cell {spec.requested_cell}"
    return "outside the requested aggregates"
