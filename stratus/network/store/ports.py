"""Ports: their addresses, their bindings, and the resource request their QoS policy makes.

Bindings follow Neutron's ml2 with the port-bindings extension: a port always has
exactly one ACTIVE binding (host ``''`` while unbound), which its ``binding:*``
attributes show; ``create_binding`` adds INACTIVE ones on other hosts (a live
migration's destination, with its own ``allocation``), ``activate_binding`` swaps
which one is ACTIVE. Bindings are only for compute ports (``device_owner``
``compute:*``), as in Neutron.
"""

from __future__ import annotations

import ipaddress
import random
import re
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store import networks as net_store
from stratus.network.store import qos as qos_store
from stratus.network.store.common import Filters, bump, dumps, loads, new_id, utcnow, where

ACTIVE, INACTIVE = "ACTIVE", "INACTIVE"
MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
PORT_COLUMNS = {"id": "id", "name": "name", "description": "description",
                "project_id": "project_id", "tenant_id": "project_id",
                "network_id": "network_id", "mac_address": "mac_address",
                "admin_state_up": "admin_state_up", "status": "status",
                "device_id": "device_id", "device_owner": "device_owner",
                "binding:vnic_type": "vnic_type", "qos_policy_id": "qos_policy_id",
                "revision_number": "revision_number",
                "port_security_enabled": "port_security_enabled"}
VIF = {"normal": ("ovs", {"connectivity": "l2", "port_filter": True, "ovs_hybrid_plug": False,
                          "datapath_type": "system", "bridge_name": "br-int"}),
       "direct": ("hw_veb", {"connectivity": "l2", "port_filter": False}),
       "macvtap": ("hw_veb", {"connectivity": "l2", "port_filter": False}),
       "direct-physical": ("hostdev_physical", {"connectivity": "l2", "port_filter": False})}


def vif(vnic_type: str, host: str) -> tuple[str, dict[str, Any]]:
    """The vif_type and vif_details a binding of this vNIC type gets on ``host``."""
    if not host:
        return "unbound", {}
    return VIF.get(vnic_type, VIF["normal"])


def _status(host: str, admin_state_up: bool) -> str:
    return "ACTIVE" if host and admin_state_up else "DOWN"


# ---- reading -------------------------------------------------------------------------


def _load(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each port with what rendering it needs: addresses, ACTIVE binding, its network's
    segment and QoS policy, and the rules of the policy in force."""
    ids = [r["id"] for r in rows]
    if not ids:
        return rows
    ips: dict[str, list[dict[str, str]]] = {i: [] for i in ids}
    for row in conn.execute(sa.select(s.ip_allocations).where(
            s.ip_allocations.c.port_id.in_(ids)).order_by(s.ip_allocations.c.ip_address)):
        ips[row.port_id].append({"subnet_id": row.subnet_id, "ip_address": row.ip_address})
    bindings = {row.port_id: dict(row._mapping) for row in conn.execute(
        sa.select(s.port_bindings).where(s.port_bindings.c.port_id.in_(ids),
                                         s.port_bindings.c.status == ACTIVE))}
    net_ids = sorted({r["network_id"] for r in rows})
    nets = {row.id: row for row in conn.execute(
        sa.select(s.networks.c.id, s.networks.c.physical_network, s.networks.c.network_type,
                  s.networks.c.qos_policy_id).where(s.networks.c.id.in_(net_ids)))}
    policies = {r["qos_policy_id"] or nets[r["network_id"]].qos_policy_id for r in rows}
    rules = qos_store.rules_of(conn, (p for p in policies if p))
    for port in rows:
        net = nets[port["network_id"]]
        binding = bindings.get(port["id"]) or {"host": "", "vnic_type": port["vnic_type"],
                                              "profile": "{}", "vif_type": "unbound",
                                              "vif_details": "{}", "status": ACTIVE}
        policy = port["qos_policy_id"] or net.qos_policy_id
        port.update(fixed_ips=ips[port["id"]], binding=_binding(binding),
                    physical_network=net.physical_network, network_type=net.network_type,
                    qos_network_policy_id=net.qos_policy_id,
                    rules=list(rules.get(policy, [])) if policy else [])
    return rows


def _binding(row: Mapping[str, Any] | sa.RowMapping) -> dict[str, Any]:
    return {"host": row["host"], "vnic_type": row["vnic_type"], "vif_type": row["vif_type"],
            "profile": loads(row["profile"]), "vif_details": loads(row["vif_details"]),
            "status": row["status"]}


def get_port(conn: Connection, port_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(s.ports).where(s.ports.c.id == port_id)).first()
    if row is None:
        raise errors.not_found("port", port_id)
    return _load(conn, [dict(row._mapping)])[0]


def list_ports(conn: Connection, filters: Filters, project_id: str | None
               ) -> list[dict[str, Any]]:
    """Ports matching the filters that are columns (``binding:host_id`` too); a
    ``project_id`` caller sees its own only."""
    t = s.ports
    query = where(sa.select(t), t, filters, PORT_COLUMNS)
    if "binding:host_id" in filters:
        b = s.port_bindings
        query = query.where(t.c.id.in_(sa.select(b.c.port_id).where(
            b.c.status == ACTIVE, b.c.host.in_(list(filters["binding:host_id"])))))
    if project_id is not None:
        query = query.where(t.c.project_id == project_id)
    return _load(conn, [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))])


# ---- writing -------------------------------------------------------------------------


def _mac(conn: Connection, network_id: str, wanted: str | None) -> str:
    taken = set(conn.execute(sa.select(s.ports.c.mac_address)
                             .where(s.ports.c.network_id == network_id)).scalars())
    if wanted is not None:
        mac = wanted.lower()
        if not MAC.fullmatch(mac):
            raise errors.BadRequest(f"Invalid input for mac_address. Reason: '{wanted}' is not "
                                    "a valid MAC address.", "HTTPBadRequest")
        if mac in taken:
            raise errors.Conflict(f"Unable to complete operation for network {network_id}. The "
                                  f"mac address {mac} is in use.", "MacAddressInUse")
        return mac
    while True:
        mac = "fa:16:3e:" + ":".join(f"{random.randrange(256):02x}" for _ in range(3))
        if mac not in taken:
            return mac


def _addresses(conn: Connection, network_id: str, wanted: list[dict[str, Any]] | None
               ) -> list[tuple[str, str]]:
    """(subnet, address) pairs for a new port: what was asked for, or the lowest free
    address of the network's first subnet of each IP version."""
    subnets = net_store.list_subnets(conn, {"network_id": [network_id]}, None)
    by_id = {sub["id"]: sub for sub in subnets}
    if wanted is None:
        firsts: dict[int, dict[str, Any]] = {}
        for sub in subnets:
            firsts.setdefault(sub["ip_version"], sub)
        wanted = [{"subnet_id": sub["id"]} for sub in firsts.values()]
    out: list[tuple[str, str]] = []
    for item in wanted:
        subnet_id, address = item.get("subnet_id"), item.get("ip_address")
        if subnet_id is None:
            subnet_id = _subnet_of(subnets, address)
        chosen = by_id.get(str(subnet_id))
        if chosen is None:
            raise errors.BadRequest(f"Invalid input for operation: Failed to create port on "
                                    f"network {network_id}, because fixed_ips included invalid "
                                    f"subnet {subnet_id}.", "InvalidInput")
        out.append((chosen["id"], _address(conn, chosen, address, {a for _, a in out})))
    return out


def _subnet_of(subnets: list[dict[str, Any]], address: Any) -> str:
    try:
        ip = ipaddress.ip_address(str(address))
    except ValueError:
        raise errors.BadRequest(f"Invalid input for fixed_ips. Reason: '{address}' is not a "
                                "valid IP address.", "HTTPBadRequest") from None
    for sub in subnets:
        if ip in ipaddress.ip_network(sub["cidr"]):
            return str(sub["id"])
    raise errors.BadRequest(f"Invalid input for operation: IP address {address} is in no "
                            "subnet of the network.", "InvalidInput")


def _address(conn: Connection, subnet: dict[str, Any], wanted: Any, also: set[str]) -> str:
    net = ipaddress.ip_network(subnet["cidr"])
    used = set(conn.execute(sa.select(s.ip_allocations.c.ip_address)
                            .where(s.ip_allocations.c.subnet_id == subnet["id"])).scalars())
    used |= also | {subnet["gateway_ip"]}
    if wanted is not None:
        try:
            ip = ipaddress.ip_address(str(wanted))
        except ValueError:
            raise errors.BadRequest(f"Invalid input for fixed_ips. Reason: '{wanted}' is not "
                                    "a valid IP address.", "HTTPBadRequest") from None
        if ip not in net or ip in (net.network_address, net.broadcast_address):
            raise errors.BadRequest(f"Invalid input for operation: IP address {wanted} is not "
                                    f"a valid IP for the specified subnet.", "InvalidInput")
        if str(ip) in used:
            raise errors.Conflict(f"Unable to complete operation for network "
                                  f"{subnet['network_id']}. The IP address {wanted} is in "
                                  "use.", "IpAddressAlreadyAllocated")
        return str(ip)
    for ip in net.hosts():
        if str(ip) not in used:
            return str(ip)
    raise errors.Conflict(f"No more IP addresses available for subnet {subnet['id']}.",
                          "IpAddressGenerationFailure")


def _check_policy(conn: Connection, policy_id: str | None, project_id: str | None) -> None:
    """The policy exists and ``project_id`` (None: an admin) may use it."""
    if policy_id is None:
        return
    policy = qos_store.get_policy(conn, policy_id)
    if project_id is not None and policy["project_id"] != project_id and not policy["shared"]:
        raise errors.not_found("policy", policy_id)


def create_port(conn: Connection, *, network_id: str, project_id: str,
                caller_project: str | None, mac_address: str | None = None,
                fixed_ips: list[dict[str, Any]] | None = None, vnic_type: str = "normal",
                host: str = "", profile: Mapping[str, Any] | None = None,
                qos_policy_id: str | None = None, admin_state_up: bool = True,
                **values: Any) -> dict[str, Any]:
    """A new port; ``caller_project`` (None for an admin) must see the network."""
    network = net_store.get_network(conn, network_id)
    if caller_project is not None and network["project_id"] != caller_project \
            and not network["shared"]:
        raise errors.not_found("network", network_id)
    _check_policy(conn, qos_policy_id, caller_project)
    port_id = new_id()
    conn.execute(sa.insert(s.ports).values(
        id=port_id, network_id=network_id, project_id=project_id,
        mac_address=_mac(conn, network_id, mac_address), status=_status(host, admin_state_up),
        vnic_type=vnic_type, qos_policy_id=qos_policy_id, admin_state_up=admin_state_up,
        created_at=utcnow(), **values))
    pairs = _addresses(conn, network_id, fixed_ips)
    if pairs:
        conn.execute(sa.insert(s.ip_allocations), [
            {"port_id": port_id, "subnet_id": sub, "ip_address": ip} for sub, ip in pairs])
    vif_type, details = vif(vnic_type, host)
    conn.execute(sa.insert(s.port_bindings).values(
        port_id=port_id, host=host, status=ACTIVE, vnic_type=vnic_type, vif_type=vif_type,
        profile=dumps(profile), vif_details=dumps(details)))
    return get_port(conn, port_id)


def update_port(conn: Connection, port_id: str, values: dict[str, Any], *,
                host: str | None = None, profile: Mapping[str, Any] | None = None,
                caller_project: str | None = None,
                expect_revision: int | None = None) -> dict[str, Any]:
    """Change the port's own fields and its ACTIVE binding (``host``, ``profile``)."""
    port = get_port(conn, port_id)
    binding = port["binding"]
    if "vnic_type" in values and values["vnic_type"] != port["vnic_type"] and binding["host"]:
        raise errors.Conflict(f"Cannot change the vNIC type of port {port_id} while it is "
                              f"bound to host {binding['host']}.", "PortBound")
    if "qos_policy_id" in values and values["qos_policy_id"] != port["qos_policy_id"]:
        _check_policy(conn, values["qos_policy_id"], caller_project)
        if binding["profile"].get("allocation"):
            raise errors.Conflict(
                f"Cannot change the QoS policy of port {port_id}: it holds an allocation in "
                "Placement for its server (binding:profile allocation). Detach it from the "
                "server first.", "QosPlacementAllocationUpdateConflict")
    new_host = binding["host"] if host is None else host
    if new_host != binding["host"] and new_host and _binding_row(conn, port_id, new_host):
        raise errors.Conflict(f"Binding for port {port_id} on host {new_host} already exists.",
                              "PortBindingAlreadyExists")
    vnic_type = values.get("vnic_type", port["vnic_type"])
    admin_up = values.get("admin_state_up", port["admin_state_up"])
    values = dict(values, status=_status(new_host, admin_up))
    bump(conn, s.ports, port_id, values, expect_revision)
    if not str(values.get("device_owner", port["device_owner"])).startswith("compute:"):
        # No longer a server's port (detached): its inactive bindings (a live migration's
        # destination) are nobody's, and the bindings API no longer reaches them.
        conn.execute(sa.delete(s.port_bindings).where(
            s.port_bindings.c.port_id == port_id, s.port_bindings.c.status == INACTIVE))
    if host is not None or profile is not None or "vnic_type" in values:
        vif_type, details = vif(vnic_type, new_host)
        conn.execute(sa.update(s.port_bindings).where(
            s.port_bindings.c.port_id == port_id, s.port_bindings.c.status == ACTIVE).values(
            host=new_host, vnic_type=vnic_type, vif_type=vif_type, vif_details=dumps(details),
            profile=dumps(binding["profile"] if profile is None else profile)))
    return get_port(conn, port_id)


def delete_port(conn: Connection, port_id: str) -> None:
    get_port(conn, port_id)
    conn.execute(sa.delete(s.ip_allocations).where(s.ip_allocations.c.port_id == port_id))
    conn.execute(sa.delete(s.port_bindings).where(s.port_bindings.c.port_id == port_id))
    conn.execute(sa.delete(s.ports).where(s.ports.c.id == port_id))


# ---- bindings (the port-bindings extension) ------------------------------------------


def _binding_row(conn: Connection, port_id: str, host: str) -> dict[str, Any] | None:
    row = conn.execute(sa.select(s.port_bindings).where(
        s.port_bindings.c.port_id == port_id, s.port_bindings.c.host == host)).first()
    return dict(row._mapping) if row else None


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
    return [_binding(r._mapping) for r in rows]


def get_binding(conn: Connection, port_id: str, host: str) -> dict[str, Any]:
    _compute_port(conn, port_id)
    row = _binding_row(conn, port_id, host) if host else None
    if row is None:
        raise _binding_not_found(port_id, host)
    return _binding(row)


def create_binding(conn: Connection, port_id: str, host: str, vnic_type: str | None,
                   profile: Mapping[str, Any] | None) -> dict[str, Any]:
    """An INACTIVE binding on ``host`` (a live migration's destination)."""
    port = _compute_port(conn, port_id)
    if _binding_row(conn, port_id, host) is not None:
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
    target = _binding_row(conn, port_id, host) if host else None
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
                                  "status": _status(host, port["admin_state_up"])})
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
