"""What the scheduler reads from the API database before asking Placement.

Availability zones and tenant isolation come from host aggregates (their
uuids are also Placement aggregate uuids); disabled cells come from the cell
list the scheduler has cached (so a disable reaches the request filter and the
host manager together, on SIGHUP or after the refresh interval). Each cell's
compute nodes sit in the Placement aggregate ``cell_aggregate_uuid(cell)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as api
from stratus.cells.aggregates import cell_aggregate_uuid
from stratus.cells.mappings import CellMapping
from stratus.scheduler.request_filters import FilterContext

AZ_KEY = "availability_zone"
# Nova's convention: filter_tenant_id, filter_tenant_id2, ... each a project (or a list).
TENANT_KEY_PREFIX = "filter_tenant_id"


@dataclass(frozen=True)
class CloudView:
    filters: FilterContext
    host_zones: dict[str, str] = field(default_factory=dict)   # host -> availability zone


# Built once: this runs on every scheduling request, and building the statement cost
# more than running it.
_AGGREGATE_METADATA = (
    sa.select(api.aggregates.c.id, api.aggregates.c.uuid, api.aggregate_metadata.c.key,
              api.aggregate_metadata.c.value)
    .join(api.aggregate_metadata, api.aggregate_metadata.c.aggregate_id == api.aggregates.c.id)
    .where(sa.or_(api.aggregate_metadata.c.key == AZ_KEY,
                  api.aggregate_metadata.c.key.startswith(TENANT_KEY_PREFIX))))
_ZONE_MEMBERS = (sa.select(api.aggregate_hosts.c.aggregate_id, api.aggregate_hosts.c.host)
                 .where(api.aggregate_hosts.c.aggregate_id.in_(
                     sa.bindparam("aggregates", expanding=True))))


def load(conn: Connection, cells: Sequence[CellMapping],
         default_zone: str | None = None) -> CloudView:
    """The request filters' context and each host's zone, from one read of the aggregates."""
    rows = conn.execute(_AGGREGATE_METADATA)
    zones: dict[str, set[str]] = {}
    zone_of_aggregate: dict[int, str] = {}
    tenants: dict[str, set[str]] = {}
    for row in rows:
        if row.key == AZ_KEY:
            zones.setdefault(row.value, set()).add(row.uuid)
            zone_of_aggregate[row.id] = row.value
        else:
            projects = {p.strip() for p in row.value.split(",") if p.strip()}
            tenants.setdefault(row.uuid, set()).update(projects)
    host_zones: dict[str, str] = {}
    if zone_of_aggregate:
        members = conn.execute(_ZONE_MEMBERS, {"aggregates": sorted(zone_of_aggregate)})
        for agg_id, host in members:
            host_zones[host] = zone_of_aggregate[agg_id]
    cell_aggregates: dict[str, str] = {}
    for cell in cells:
        agg = cell_aggregate_uuid(cell.uuid)
        cell_aggregates[cell.uuid] = agg
        if cell.name:
            cell_aggregates[cell.name] = agg
    ctx = FilterContext(
        az_aggregates={z: frozenset(a) for z, a in zones.items()},
        tenant_aggregates={a: frozenset(p) for a, p in tenants.items()},
        disabled_cell_aggregates=frozenset(cell_aggregate_uuid(c.uuid) for c in cells
                                           if c.disabled and not c.is_cell0),
        cell_aggregates=cell_aggregates,
        default_zone=default_zone,
    )
    return CloudView(ctx, host_zones)
