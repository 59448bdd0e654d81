"""Request filters: small functions that sharpen the Placement query before it is sent.

Each takes the request, the query being built and what it needs to know about
the cloud (``FilterContext``), changes the query in place, and returns a short
note of what it did (or None if it did nothing), which the scheduler logs.
They run in the order of ``DEFAULT_ORDER``; ``compute_status`` always runs,
whatever the configuration says (design document 000: no option to turn it off).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from stratus.scheduler.request import PlacementQuery, RequestSpec

COMPUTE_STATUS_DISABLED = "COMPUTE_STATUS_DISABLED"


class NoHostPossible(Exception):
    """A request filter found the request unsatisfiable before asking Placement."""


@dataclass(frozen=True)
class FilterContext:
    # availability zone name -> uuids of the aggregates that make it up
    az_aggregates: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # aggregate uuid -> projects allowed in it; aggregates absent here are open to all
    tenant_aggregates: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # aggregates holding the compute nodes of disabled cells
    disabled_cell_aggregates: frozenset[str] = frozenset()
    # cell name -> aggregate uuid holding that cell's compute nodes
    cell_aggregates: Mapping[str, str] = field(default_factory=dict)
    # the zone of hosts in no availability-zone aggregate ([DEFAULT]
    # default_availability_zone)
    default_zone: str | None = None


RequestFilter = Callable[[RequestSpec, PlacementQuery, FilterContext], "str | None"]


def compute_status(spec: RequestSpec, query: PlacementQuery, ctx: FilterContext) -> str | None:
    """Forbid disabled computes: the trait sits on the root provider only, so use root_required."""
    query.root_forbidden.add(COMPUTE_STATUS_DISABLED)
    return f"root_required=!{COMPUTE_STATUS_DISABLED}"


def disabled_cells(spec: RequestSpec, query: PlacementQuery, ctx: FilterContext) -> str | None:
    """Keep hosts of disabled cells out of the answer; a request that names a cell (a move
    of an existing server, which stays in its cell) gets that cell's hosts only, even if
    the cell is disabled (design document 002: moves are not blocked)."""
    if spec.requested_cell and spec.requested_cell in ctx.cell_aggregates:
        aggregate = ctx.cell_aggregates[spec.requested_cell]
        query.unnumbered.member_of.append(frozenset({aggregate}))
        return f"member_of={aggregate} (the hosts of cell {spec.requested_cell})"
    excluded = set(ctx.disabled_cell_aggregates)
    if not excluded:
        return None
    query.unnumbered.forbidden_aggregates |= excluded
    return f"member_of=!in:{len(excluded)} disabled-cell aggregate(s)"


def availability_zone(spec: RequestSpec, query: PlacementQuery, ctx: FilterContext) -> str | None:
    """An availability zone becomes member_of its aggregates."""
    if not spec.availability_zone:
        return None
    aggregates = ctx.az_aggregates.get(spec.availability_zone)
    if not aggregates and spec.availability_zone == ctx.default_zone:
        # The default zone is every host in no zone's aggregate (Nova's meaning).
        others = frozenset().union(*ctx.az_aggregates.values()) if ctx.az_aggregates \
            else frozenset()
        query.unnumbered.forbidden_aggregates |= others
        return (f"member_of=!in:{len(others)} aggregate(s) of other zones (default zone "
                f"{spec.availability_zone})")
    if not aggregates:
        raise NoHostPossible(f"availability zone {spec.availability_zone!r} has no hosts")
    query.unnumbered.member_of.append(frozenset(aggregates))
    return f"member_of=in:{len(aggregates)} aggregate(s) of zone {spec.availability_zone}"


def tenant_isolation(spec: RequestSpec, query: PlacementQuery, ctx: FilterContext) -> str | None:
    """Aggregates reserved for some projects are forbidden to every other project."""
    closed = {agg for agg, projects in ctx.tenant_aggregates.items()
              if spec.project_id not in projects}
    if not closed:
        return None
    query.unnumbered.forbidden_aggregates |= closed
    return f"member_of=!in:{len(closed)} aggregate(s) reserved for other projects"


REGISTRY: dict[str, RequestFilter] = {
    "compute_status": compute_status,
    "disabled_cells": disabled_cells,
    "availability_zone": availability_zone,
    "tenant_isolation": tenant_isolation,
}
DEFAULT_ORDER = ["compute_status", "disabled_cells", "availability_zone", "tenant_isolation"]
ALWAYS_ON = ("compute_status",)


def resolve(names: Sequence[str]) -> list[RequestFilter]:
    """The filters to run for configured ``names``, with the always-on ones first."""
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown request filter(s): {', '.join(unknown)}; "
                         f"known: {', '.join(REGISTRY)}")
    ordered = list(ALWAYS_ON) + [n for n in names if n not in ALWAYS_ON]
    return [REGISTRY[n] for n in ordered]


def apply(
    spec: RequestSpec, query: PlacementQuery, ctx: FilterContext,
    filters: Sequence[RequestFilter],
) -> list[str]:
    """Run ``filters`` over ``query``; return their notes in order."""
    notes = []
    for request_filter in filters:
        note = request_filter(spec, query, ctx)
        if note:
            notes.append(f"{request_filter.__name__}: {note}")
    return notes
