"""Compute nodes (a cell database), with the service that runs each."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as cs
from stratus.cells import services
from stratus.cells.services import Service


@dataclass(frozen=True)
class Node:
    uuid: str               # also the root resource provider's uuid
    hostname: str           # hypervisor_hostname
    host: str
    hypervisor_type: str
    vcpus: int
    memory_mb: int
    local_gb: int
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    running_vms: int
    service: Service | None
    id: int = 0             # the row's id in its cell (the API's id before 2.53)
    created_at: dt.datetime | None = None


def nodes(conn: Connection, host: str | None = None, uuid: str | None = None,
          node_id: int | None = None) -> list[Node]:
    t = cs.compute_nodes
    query = sa.select(t).order_by(t.c.hypervisor_hostname)
    if host is not None:
        query = query.where(t.c.host == host)
    if uuid is not None:
        query = query.where(t.c.uuid == uuid)
    if node_id is not None:
        query = query.where(t.c.id == node_id)
    rows = list(conn.execute(query))
    by_id = {svc.id: svc for svc in services.list_all(conn)} if rows else {}
    return [Node(r.uuid, r.hypervisor_hostname, r.host, r.hypervisor_type, r.vcpus,
                 r.memory_mb, r.local_gb, r.vcpus_used, r.memory_mb_used, r.local_gb_used,
                 r.running_vms, by_id.get(r.service_id), r.id, r.created_at) for r in rows]


def delete_host_nodes(conn: Connection, host: str) -> None:
    """Forget the host's compute_nodes rows (its service is being deleted)."""
    conn.execute(sa.delete(cs.compute_nodes).where(cs.compute_nodes.c.host == host))
