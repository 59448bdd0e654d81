"""os-services: list, enable/disable/force down (telling the compute), delete.

Disabling or enabling a compute (design document 000): the services row is
written first, then the compute is called synchronously (set_host_enabled) so
COMPUTE_STATUS_DISABLED is on its root providers in Placement before the API
answers. A compute that is down or older than ComputeRPC 1.1 is not called:
only the row changes, and the compute syncs the trait when it (re)starts.

If the call fails (a timeout, the compute failing to reach Placement) the API
does what Nova does: the row change stands, the failure is logged naming the
host, and the answer is still 200, because the compute's periodic resource pass
repairs the trait from the row. Stratus also returns the failure as a
``Warning`` header so the operator sees it (the client prints it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx

from stratus.api.binaries import api_name
from stratus.api.deps import ComputeAPIDeps
from stratus.api.store import aggregates as agg_store
from stratus.api.store import cells as cell_store
from stratus.api.store import hypervisors as hv_store
from stratus.api.store import servers as server_store
from stratus.api.store.cells import COMPUTE_BINARY
from stratus.api.store.errors import BadRequest, Conflict, ServiceUnavailable
from stratus.cells import services
from stratus.cells.mappings import CellMapping
from stratus.cells.services import Service
from stratus.compute.api_helpers import set_host_enabled_if_supported
from stratus.compute.provider_sync import PlacementSync
from stratus.placement import client as pc
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    disabled: bool | None = None
    disabled_reason: str | None = None
    forced_down: bool | None = None


def update(api: ComputeAPIDeps, ident: str | int, change: Change
           ) -> tuple[Service, list[str]]:
    """Apply ``change`` to the compute service ``ident`` (a uuid, or an integer id as
    before 2.53); (the service, warnings)."""
    return update_found(api, *cell_store.find_service(api.dbs, ident), change)


def update_by_host(api: ComputeAPIDeps, host: str, binary: str, change: Change
                   ) -> tuple[Service, list[str]]:
    """The same for the service named by host and binary (the API before 2.53)."""
    _check_updatable(binary)
    return update_found(api, *cell_store.find_by_host(api.dbs, host, binary), change)


def _check_updatable(binary: str) -> None:
    if binary != COMPUTE_BINARY:
        raise BadRequest(f"Updating a {api_name(binary)} service is not supported. Only "
                         f"{api_name(COMPUTE_BINARY)} services can be updated.")


def update_found(api: ComputeAPIDeps, cell: CellMapping, svc: Service, change: Change
                 ) -> tuple[Service, list[str]]:
    _check_updatable(svc.binary)
    with db.write(api.dbs.engine(cell)) as conn:
        svc = services.update(conn, svc.id, disabled=change.disabled,
                              disabled_reason=change.disabled_reason,
                              forced_down=change.forced_down)
    warnings = []
    if change.disabled is not None:
        warning = _tell_compute(api, cell, svc)
        if warning:
            warnings.append(warning)
    return svc, warnings


def _tell_compute(api: ComputeAPIDeps, cell: CellMapping, svc: Service) -> str | None:
    enabled = not svc.disabled
    try:
        called = set_host_enabled_if_supported(api.compute(cell), svc, enabled,
                                               now=api.clock(),
                                               down_time=api.service_down_time)
    except Exception as exc:
        LOG.error("set_host_enabled(%s) on compute host %s failed: %s; the compute will "
                  "sync COMPUTE_STATUS_DISABLED on its next resource tracker pass",
                  enabled, svc.host, exc)
        return (f"compute host {svc.host} did not confirm the "
                f"{'enable' if enabled else 'disable'} ({type(exc).__name__}: {exc}); "
                "the service record is updated and the compute will sync the "
                "COMPUTE_STATUS_DISABLED trait on its next resource tracker pass")
    if not called:
        LOG.info("compute host %s is down or too old to call; COMPUTE_STATUS_DISABLED "
                 "will be synced when it (re)starts", svc.host)
    return None


def delete(api: ComputeAPIDeps, ident: str | int) -> Service:
    """Delete a service; a compute's providers leave Placement with it.

    Refused (409) while the host has servers or its providers hold allocations:
    deleting them would lose track of what is consumed. Checks come first, then
    Placement, then the databases, so a refusal changes nothing.
    """
    cell, svc = cell_store.find_service(api.dbs, ident)
    if svc.binary == COMPUTE_BINARY:
        _delete_compute_leftovers(api, cell, svc)
    with db.write(api.dbs.engine(cell)) as conn:
        if svc.binary == COMPUTE_BINARY:
            hv_store.delete_host_nodes(conn, svc.host)
        services.delete(conn, svc.id)
    return svc


def _delete_compute_leftovers(api: ComputeAPIDeps, cell: CellMapping, svc: Service) -> None:
    engine = api.dbs.engine(cell)
    with db.read(engine) as conn:
        hosted = server_store.hosts_servers(conn, svc.host)
        nodes = hv_store.nodes(conn, host=svc.host)
    if hosted:
        raise Conflict(f"Unable to delete compute service that is hosting instances: host "
                       f"{svc.host} has {len(hosted)} server(s). Migrate or delete the "
                       "instances first.")
    trees: dict[str, list[str]] = {}
    try:
        for node in nodes:
            try:
                trees[node.uuid] = [p["uuid"] for p in api.placement.providers_in_tree(
                    node.uuid)]
            except pc.NotFound:
                continue
            for provider in trees[node.uuid]:
                used = {rc: n for rc, n in api.placement.usages(provider).items() if n}
                if used:
                    shown = ", ".join(f"{rc}={n}" for rc, n in sorted(used.items()))
                    raise Conflict(
                        f"Unable to delete compute service on host {svc.host}: resource "
                        f"provider {provider} (node {node.hostname}) still has allocations "
                        f"({shown}). Remove them first.")
        sync = PlacementSync(api.placement)
        for root in trees:
            sync.delete_missing(root, keep=())
    except pc.Conflict as exc:
        raise Conflict(f"Unable to delete compute service on host {svc.host}: Placement "
                       f"refused to delete its providers: {exc.detail}") from None
    except (pc.PlacementClientError, httpx.HTTPError) as exc:
        raise ServiceUnavailable(f"Unable to delete compute service on host {svc.host}: "
                                 f"Placement failed: {exc}") from None
    with db.write(api.dbs.api) as conn:
        agg_store.remove_host_everywhere(conn, svc.host)
        cell_store.unmap_host(conn, svc.host)
