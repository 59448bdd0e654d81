"""Host aggregates: membership is mirrored in Placement.

The aggregate's uuid is a Placement aggregate; adding a host puts the root
provider of each of its compute nodes in it (so ``member_of`` finds the host,
which is how an availability zone reaches Placement), removing takes them out.
The compute's resource tracker merges aggregates, so it keeps what the API set.
As in Nova, a Placement failure here is a warning, not a failed request: the
API database is the record and the operator can repeat the call.
"""

from __future__ import annotations

import logging

import httpx

from stratus.api.deps import ComputeAPIDeps
from stratus.api.store import aggregates as store
from stratus.api.store import cells as cell_store
from stratus.api.store import hypervisors as hv_store
from stratus.api.store.aggregates import Aggregate
from stratus.api.store.errors import NotFound, ServiceUnavailable
from stratus.cells.mappings import CellMapping
from stratus.compute.provider_sync import PlacementSync, SyncConflict
from stratus.placement import client as pc
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


def add_host(api: ComputeAPIDeps, agg_id: int, host: str) -> tuple[Aggregate, list[str]]:
    cell, _svc = cell_store.find_compute(api.dbs, host)
    with db.write(api.dbs.api) as conn:
        agg = store.add_host(conn, agg_id, host)
    return agg, _mirror(api, cell, host, agg.uuid, member=True)


def remove_host(api: ComputeAPIDeps, agg_id: int, host: str) -> tuple[Aggregate, list[str]]:
    with db.write(api.dbs.api) as conn:
        agg = store.remove_host(conn, agg_id, host)
    try:
        cell, _svc = cell_store.find_compute(api.dbs, host)
    except (NotFound, ServiceUnavailable):  # no service: nothing to take out of Placement
        return agg, []
    return agg, _mirror(api, cell, host, agg.uuid, member=False)


def _mirror(api: ComputeAPIDeps, cell: CellMapping, host: str, agg_uuid: str,
            member: bool) -> list[str]:
    with db.read(api.dbs.engine(cell)) as conn:
        nodes = hv_store.nodes(conn, host=host)
    sync = PlacementSync(api.placement)
    warnings = []
    for node in nodes:
        try:
            sync.aggregates(node.uuid, {agg_uuid} if member else set(), managed={agg_uuid})
        except pc.NotFound:
            LOG.info("node %s of host %s has no provider in Placement yet", node.hostname,
                     host)
        except (pc.PlacementClientError, SyncConflict, httpx.HTTPError) as exc:
            what = "add" if member else "remove"
            LOG.warning("could not %s provider %s (host %s) in Placement aggregate %s: %s",
                        what, node.uuid, host, agg_uuid, exc)
            warnings.append(f"could not {what} the provider of node {node.hostname} "
                            f"(host {host}) in Placement aggregate {agg_uuid}: {exc}")
    return warnings
