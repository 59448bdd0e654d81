"""A compute_nodes row written in bulk, inside a transaction of the caller's: what
``stratus serve``'s first pass over all its hosts (:mod:`stratus.allinone.seed`) writes
before any compute service runs. A running compute writes its rows through
:mod:`stratus.compute.records` (its cell's conductor, or ``--cell-db``).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as s
from stratus.compute.provider_tree import ProviderTree
from stratus.compute.records import NodeUsage

__all__ = ["NodeUsage", "save_compute_node"]


def save_compute_node(conn: Connection, *, service_id: int | None, host: str, node: str,
                      hypervisor_type: str, tree: ProviderTree, usage: NodeUsage,
                      now: dt.datetime) -> None:
    """Insert or refresh the node's row, keyed by its root provider's uuid."""
    values = {
        "service_id": service_id, "host": host, "hypervisor_hostname": node,
        "hypervisor_type": hypervisor_type, "vcpus": tree.total("VCPU"),
        "memory_mb": tree.total("MEMORY_MB"), "local_gb": tree.total("DISK_GB"),
        "vcpus_used": usage.vcpus_used, "memory_mb_used": usage.memory_mb_used,
        "local_gb_used": usage.local_gb_used, "running_vms": usage.running_vms,
    }
    table = s.compute_nodes
    found = conn.execute(sa.select(table.c.id).where(table.c.uuid == tree.root.uuid)).first()
    if found is None:
        conn.execute(sa.insert(table).values(uuid=tree.root.uuid, created_at=now, **values))
    else:
        conn.execute(sa.update(table).where(table.c.id == found.id)
                     .values(updated_at=now, **values))
