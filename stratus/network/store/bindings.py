"""Port bindings (the port-bindings extension): a compute port's ACTIVE binding is the
one its ``binding:*`` attributes show; ``create_binding`` adds INACTIVE ones on other
hosts (a live migration's destination, with its own ``allocation``) and
``activate_binding`` swaps which one is ACTIVE. Only for compute ports
(``device_owner`` ``compute:*``), as in Neutron.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store.common import bump, dumps
from stratus.network.store.ports import (
    ACTIVE,
    INACTIVE,
    binding_of,
    binding_row,
    get_port,
    status_for,
    vif,
)


def _compute_port(conn: Connection, port_id: str) -> dict[str, Any]:
    port = get_port(conn, port_id)
    if not str(port["device_owner"]).startswith("compute:"):
        raise errors.BadRequest(f"Bad port request: Invalid port {port_id}. Operation only "
                                "valid on compute and shared filesystem ports.", "BadRequest")
    return port


def _binding_not_found(port_id: str, host: str) -> errors.NotFound:
    return errors.NotFound(f"Binding for port {port_id} for host {host} could not be found.",
                           "PortBindingNotFound")


def list_bindings(conn: Connection, port_id: str) -> list[dict[str, Any]]:
    _compute_port(conn, port_id)
    rows = conn.execute(sa.select(s.port_bindings).where(
        s.port_bindings.c.port_id == port_id, s.port_bindings.c.host != "")
        .order_by(s.port_bindings.c.host))
    return [binding_of(r._mapping) for r in rows]


def get_binding(conn: Connection, port_id: str, host: str) -> dict[str, Any]:
    _compute_port(conn, port_id)
    row = binding_row(conn, port_id, host) if host else None
    if row is None:
        raise _binding_not_found(port_id, host)
    return binding_of(row)


def create_binding(conn: Connection, port_id: str, host: str, vnic_type: str | None,
                   profile: Mapping[str, Any] | None) -> dict[str, Any]:
    """An INACTIVE binding on ``host`` (a live migration's destination)."""
    port = _compute_port(conn, port_id)
    if binding_row(conn, port_id, host) is not None:
        raise errors.Conflict(f"Binding for port {port_id} on host {host} already exists.",
                              "PortBindingAlreadyExists")
    vnic = vnic_type or port["vnic_type"]
    vif_type, details = vif(vnic, host)
    conn.execute(sa.insert(s.port_bindings).values(
        port_id=port_id, host=host, status=INACTIVE, vnic_type=vnic, vif_type=vif_type,
        profile=dumps(profile), vif_details=dumps(details)))
    bump(conn, s.ports, port_id, {})
    return get_binding(conn, port_id, host)


def update_binding(conn: Connection, port_id: str, host: str, vnic_type: str | None,
                   profile: Mapping[str, Any] | None) -> dict[str, Any]:
    current = get_binding(conn, port_id, host)
    vnic = vnic_type or current["vnic_type"]
    vif_type, details = vif(vnic, host)
    conn.execute(sa.update(s.port_bindings).where(
        s.port_bindings.c.port_id == port_id, s.port_bindings.c.host == host).values(
        vnic_type=vnic, vif_type=vif_type, vif_details=dumps(details),
        profile=dumps(current["profile"] if profile is None else profile)))
    if current["status"] == ACTIVE and vnic != current["vnic_type"]:
        conn.execute(sa.update(s.ports).where(s.ports.c.id == port_id).values(vnic_type=vnic))
    bump(conn, s.ports, port_id, {})
    return get_binding(conn, port_id, host)


def activate_binding(conn: Connection, port_id: str, host: str) -> dict[str, Any]:
    """``host``'s INACTIVE binding becomes the ACTIVE one; the old ACTIVE one turns INACTIVE
    (an unbound one, host '', simply goes)."""
    port = _compute_port(conn, port_id)
    if port["binding"]["host"] == host:
        raise errors.Conflict(f"Binding for port {port_id} on host {host} is already active.",
                              "PortBindingAlreadyActive")
    target = binding_row(conn, port_id, host) if host else None
    if target is None:
        raise _binding_not_found(port_id, host)
    b = s.port_bindings
    old = port["binding"]["host"]
    if old:
        conn.execute(sa.update(b).where(b.c.port_id == port_id, b.c.host == old)
                     .values(status=INACTIVE))
    else:
        conn.execute(sa.delete(b).where(b.c.port_id == port_id, b.c.host == ""))
    conn.execute(sa.update(b).where(b.c.port_id == port_id, b.c.host == host)
                 .values(status=ACTIVE))
    bump(conn, s.ports, port_id, {"vnic_type": target["vnic_type"],
                                  "status": status_for(host, port["admin_state_up"])})
    return get_binding(conn, port_id, host)


def delete_binding(conn: Connection, port_id: str, host: str) -> None:
    current = get_binding(conn, port_id, host)
    if current["status"] == ACTIVE:
        raise errors.Conflict(f"Binding for port {port_id} on host {host} is the active one; "
                              "activate another binding first (or unbind the port).",
                              "PortBindingActive")
    conn.execute(sa.delete(s.port_bindings).where(s.port_bindings.c.port_id == port_id,
                                                  s.port_bindings.c.host == host))
    bump(conn, s.ports, port_id, {})
