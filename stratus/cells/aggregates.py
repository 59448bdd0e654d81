"""The Placement aggregate that holds a cell's compute nodes (design document 002, issue 5).

Every compute node's ROOT resource provider is put in its cell's aggregate by
the compute service's resource tracker; the scheduler's ``disabled_cells``
request filter then forbids the aggregates of disabled cells
(``member_of=!in:...``), so Placement never offers their hosts, whatever
``max_placement_results`` is. The uuid is derived from the cell's uuid, so
every process computes the same one without asking anybody.
"""

from __future__ import annotations

import functools
import uuid

# Fixed namespace for cell aggregates; never change it (existing providers carry the result).
CELL_AGGREGATE_NAMESPACE = uuid.UUID("5d0c2b9e-3c1f-4b8e-9a8e-3f3c6f2b7a11")


@functools.lru_cache(maxsize=1024)   # the scheduler asks for every cell on every request
def cell_aggregate_uuid(cell_uuid: str) -> str:
    """The uuid of the Placement aggregate holding ``cell_uuid``'s compute nodes."""
    return str(uuid.uuid5(CELL_AGGREGATE_NAMESPACE, f"cell/{cell_uuid}"))
