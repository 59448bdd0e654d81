"""What a compute service writes in its cell database besides its service row:
its compute_nodes rows (one per node; the row's uuid is the node's root provider)
and the state of the instances it runs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.cells import schema as s
from stratus.compute.provider_tree import ProviderTree

# Instance states as Nova spells them (vm_state, task_state, power_state).
ACTIVE, BUILDING, DELETED = "active", "building", "deleted"
SCHEDULING = "scheduling"
RUNNING, NOSTATE = 1, 0


@dataclass(frozen=True)
class NodeUsage:
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    running_vms: int


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


def root_provider_uuids(conn: Connection, host: str) -> list[str]:
    """The root providers of every node this host has reported."""
    table = s.compute_nodes
    rows = conn.execute(sa.select(table.c.uuid).where(table.c.host == host)
                        .order_by(table.c.hypervisor_hostname))
    return [r.uuid for r in rows]


def _update_instance(conn: Connection, uuid: str, **values: object) -> bool:
    table = s.instances
    result = conn.execute(sa.update(table).where(table.c.uuid == uuid,
                                                 table.c.deleted_at.is_(None))
                          .values(**values))
    return bool(result.rowcount)


def instance_active(conn: Connection, uuid: str, host: str, node: str,
                    now: dt.datetime) -> bool:
    """The instance runs on ``host``/``node``; False if it has no (undeleted) row."""
    return _update_instance(conn, uuid, vm_state=ACTIVE, task_state=None, power_state=RUNNING,
                            host=host, node=node, launched_at=now, updated_at=now)


def instance_rescheduling(conn: Connection, uuid: str, now: dt.datetime) -> bool:
    """The spawn here failed: no host, back to scheduling until the conductor decides."""
    return _update_instance(conn, uuid, vm_state=BUILDING, task_state=SCHEDULING,
                            power_state=NOSTATE, host=None, node=None, updated_at=now)


def instance_deleted(conn: Connection, uuid: str, now: dt.datetime) -> bool:
    return _update_instance(conn, uuid, vm_state=DELETED, task_state=None,
                            power_state=NOSTATE, deleted_at=now, updated_at=now)
