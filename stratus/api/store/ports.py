"""Which ports each server has (``instance_ports`` in the API database): kept by the API
(boot with ports, interface attach and detach, delete) and the conductor (the ports it
makes from a boot's networks)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.api import schema as s
from stratus.api.store.servers import utcnow
from stratus.storage import prepared


@dataclass(frozen=True)
class ServerPort:
    instance_uuid: str
    port_id: str
    preserve_on_delete: bool
    position: int | None


def _row(row: sa.Row) -> ServerPort:
    return ServerPort(row.instance_uuid, row.port_id, bool(row.preserve_on_delete),
                      row.position)


def add(conn: Connection, instance_uuid: str, port_id: str, *, preserve: bool,
        position: int | None = None) -> None:
    conn.execute(sa.insert(s.instance_ports).values(
        instance_uuid=instance_uuid, port_id=port_id, preserve_on_delete=preserve,
        position=position, created_at=utcnow()))


def of(conn: Connection, instance_uuids: Iterable[str]) -> dict[str, list[ServerPort]]:
    """instance -> its ports, in the order it got them."""
    uuids = sorted(set(instance_uuids))
    out: dict[str, list[ServerPort]] = {u: [] for u in uuids}
    t = s.instance_ports
    for i in range(0, len(uuids), 500):
        rows = prepared.select(conn, t, {"instance_uuid": uuids[i:i + 500]},
                               order_by=("id",))
        for row in rows:
            out[row.instance_uuid].append(_row(row))
    return out


def remove(conn: Connection, port_id: str) -> None:
    conn.execute(sa.delete(s.instance_ports).where(s.instance_ports.c.port_id == port_id))


def remove_all(conn: Connection, instance_uuid: str) -> None:
    conn.execute(sa.delete(s.instance_ports)
                 .where(s.instance_ports.c.instance_uuid == instance_uuid))
