"""Ports: their addresses, security groups, options, ACTIVE binding, and the resource
request their QoS policy makes.

A port always has exactly one ACTIVE binding (host ``''`` while unbound), as
Neutron's ml2 keeps it; :mod:`.bindings` adds the INACTIVE ones. A new port joins
its project's default security group unless it names groups, has port security off,
or is the network's own (``network:*``); port security defaults to its network's.
Ports owned by a router or a floating IP are changed through those, not deleted here
(``L3PortInUse``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store import access, addresses, port_options, quotas
from stratus.network.store import networks as net_store
from stratus.network.store import qos as qos_store
from stratus.network.store import security_groups as sg_store
from stratus.network.store.common import (
    Filters,
    bump,
    dumps,
    forget_tags,
    loads,
    new_id,
    utcnow,
    where,
)

ACTIVE, INACTIVE = "ACTIVE", "INACTIVE"
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
# Ports only their router or floating IP may remove.
L3_OWNERS = ("network:router_interface", "network:router_gateway", "network:floatingip")


def vif(vnic_type: str, host: str) -> tuple[str, dict[str, Any]]:
    """The vif_type and vif_details a binding of this vNIC type gets on ``host``."""
    if not host:
        return "unbound", {}
    return VIF.get(vnic_type, VIF["normal"])


def status_for(host: str, admin_state_up: bool, device_owner: str = "") -> str:
    """ACTIVE once bound (a router's or floating IP's port: at once), else DOWN."""
    bound = bool(host) or device_owner.startswith("network:")
    return "ACTIVE" if bound and admin_state_up else "DOWN"


def is_network_owned(device_owner: str) -> bool:
    return device_owner.startswith("network:")


# ---- reading -------------------------------------------------------------------------


def _load(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each port with what rendering it needs: addresses, groups, options, ACTIVE
    binding, its network's segment and QoS policy, and the rules of the policy in force."""
    ids = [r["id"] for r in rows]
    if not ids:
        return rows
    ips = addresses.of_ports(conn, ids)
    groups = sg_store.groups_of(conn, ids)
    pairs, options = port_options.of_ports(conn, ids)
    bindings = {row.port_id: dict(row._mapping) for row in conn.execute(
        sa.select(s.port_bindings).where(s.port_bindings.c.port_id.in_(ids),
                                         s.port_bindings.c.status == ACTIVE))}
    net_ids = sorted({r["network_id"] for r in rows})
    nets = {row.id: row for row in conn.execute(
        sa.select(s.networks.c.id, s.networks.c.physical_network, s.networks.c.network_type,
                  s.networks.c.qos_policy_id, s.networks.c.project_id)
        .where(s.networks.c.id.in_(net_ids)))}
    policies = {r["qos_policy_id"] or nets[r["network_id"]].qos_policy_id for r in rows}
    rules = qos_store.rules_of(conn, (p for p in policies if p))
    for port in rows:
        net = nets[port["network_id"]]
        binding = bindings.get(port["id"]) or {"host": "", "vnic_type": port["vnic_type"],
                                              "profile": "{}", "vif_type": "unbound",
                                              "vif_details": "{}", "status": ACTIVE}
        policy = port["qos_policy_id"] or net.qos_policy_id
        port.update(fixed_ips=ips[port["id"]], binding=binding_of(binding),
                    security_groups=groups[port["id"]],
                    allowed_address_pairs=pairs[port["id"]],
                    extra_dhcp_opts=options[port["id"]],
                    physical_network=net.physical_network, network_type=net.network_type,
                    network_project_id=net.project_id,
                    qos_network_policy_id=net.qos_policy_id,
                    rules=list(rules.get(policy, [])) if policy else [])
    return rows


def binding_of(row: Mapping[str, Any] | sa.RowMapping) -> dict[str, Any]:
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
    """Ports matching the filters the store knows (columns, ``binding:host_id``,
    ``fixed_ips``, ``security_groups``); a ``project_id`` caller sees its own and those
    on its networks."""
    t = s.ports
    query = where(sa.select(t), t, filters, PORT_COLUMNS)
    if "binding:host_id" in filters:
        b = s.port_bindings
        query = query.where(t.c.id.in_(sa.select(b.c.port_id).where(
            b.c.status == ACTIVE, b.c.host.in_(list(filters["binding:host_id"])))))
    if "fixed_ips" in filters:
        query = query.where(addresses.filter_clause(filters["fixed_ips"]))
    if "security_groups" in filters:
        psg = s.port_security_groups
        query = query.where(t.c.id.in_(sa.select(psg.c.port_id).where(
            psg.c.security_group_id.in_(list(filters["security_groups"])))))
    if project_id is not None:
        owned = sa.select(s.networks.c.id).where(s.networks.c.project_id == project_id)
        query = query.where(sa.or_(t.c.project_id == project_id, t.c.network_id.in_(owned)))
    return _load(conn, [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))])


def visible_port(conn: Connection, port_id: str, project_id: str | None) -> dict[str, Any]:
    """The port if ``project_id`` (None: an admin) owns it or its network, else 404."""
    port = get_port(conn, port_id)
    if project_id is not None and project_id not in (port["project_id"],
                                                     port["network_project_id"]):
        raise errors.not_found("port", port_id)
    return port


# ---- writing -------------------------------------------------------------------------


def check_policy_change(conn: Connection, old_policy_id: str | None,
                        project_id: str | None) -> None:
    """A project may take a QoS policy off its network or port only if it may see it
    (Neutron's PolicyRemoveAuthorizationError, 403): an admin's policy set on a
    project's network stays until an admin (or a grant) lets the project change it."""
    if old_policy_id is not None and not access.can(conn, "qos_policy", old_policy_id,
                                                    project_id):
        raise errors.Forbidden(f"Failed to remove provided policy {old_policy_id} because "
                               "you are not authorized.", "PolicyRemoveAuthorizationError")


def check_policy(conn: Connection, policy_id: str | None, project_id: str | None) -> None:
    """The QoS policy exists and ``project_id`` (None: an admin) may use it."""
    if policy_id is None:
        return
    qos_store.get_policy(conn, policy_id)
    if not access.can(conn, "qos_policy", policy_id, project_id):
        raise errors.not_found("policy", policy_id)


def _security(conn: Connection, port_id: str, project_id: str, is_admin: bool,
              device_owner: str, enabled: bool, groups: Sequence[str] | None,
              pairs: Sequence[tuple[str, str]], creating: bool) -> None:
    """Port security's rules: groups and address pairs need it on; a new port naming no
    group joins its project's default group."""
    if not enabled:
        if groups:
            raise errors.BadRequest("Port security must be enabled and port must have an IP "
                                    "address in order to use security groups.",
                                    "PortSecurityAndIPRequiredForSecurityGroups")
        if pairs:
            raise errors.Conflict("Port Security must be enabled in order to have allowed "
                                  "address pairs on a port.",
                                  "AddressPairAndPortSecurityRequired")
    if groups is None and creating:
        groups = [] if not enabled or is_network_owned(device_owner) else \
            [sg_store.ensure_default(conn, project_id)]
    if groups is not None:
        sg_store.set_port_groups(conn, port_id, groups, project_id, is_admin)


def create_port(conn: Connection, *, network_id: str, project_id: str,
                caller_project: str | None, mac_address: str | None = None,
                fixed_ips: list[dict[str, Any]] | None = None, vnic_type: str = "normal",
                host: str = "", profile: Mapping[str, Any] | None = None,
                qos_policy_id: str | None = None, admin_state_up: bool = True,
                security_groups: Sequence[str] | None = None,
                port_security_enabled: bool | None = None,
                allowed_address_pairs: Any = None, extra_dhcp_opts: Any = None,
                device_owner: str = "", **values: Any) -> dict[str, Any]:
    """A new port; ``caller_project`` (None for an admin) must be allowed to use the
    network (its own, or shared with it)."""
    network = net_store.get_network(conn, network_id)
    if caller_project is not None and not access.can(
            conn, "network", network_id, caller_project, access.network_usable(caller_project)):
        raise errors.not_found("network", network_id)
    check_policy(conn, qos_policy_id, caller_project)
    if port_security_enabled is None:
        port_security_enabled = bool(network["port_security_enabled"])
    port_id = new_id()
    mac = addresses.mac(conn, network_id, mac_address)
    pairs = port_options.address_pairs(allowed_address_pairs, mac)
    conn.execute(sa.insert(s.ports).values(
        id=port_id, network_id=network_id, project_id=project_id, mac_address=mac,
        status=status_for(host, admin_state_up, device_owner), vnic_type=vnic_type,
        qos_policy_id=qos_policy_id, admin_state_up=admin_state_up,
        port_security_enabled=port_security_enabled, device_owner=device_owner,
        created_at=utcnow(), **values))
    addresses.write(conn, port_id, addresses.plan(conn, network_id, mac, fixed_ips,
                                                  device_owner=device_owner))
    _security(conn, port_id, project_id, caller_project is None, device_owner,
              port_security_enabled, security_groups, pairs, creating=True)
    port_options.write_pairs(conn, port_id, pairs)
    port_options.write_dhcp(conn, port_id, port_options.dhcp_options(extra_dhcp_opts),
                            replace=True)
    vif_type, details = vif(vnic_type, host)
    conn.execute(sa.insert(s.port_bindings).values(
        port_id=port_id, host=host, status=ACTIVE, vnic_type=vnic_type, vif_type=vif_type,
        profile=dumps(profile), vif_details=dumps(details)))
    if project_id:   # routers' gateways and floating IPs' ports belong to no project
        quotas.check(conn, project_id, "port")
    return get_port(conn, port_id)


def update_port(conn: Connection, port_id: str, values: dict[str, Any], *,
                host: str | None = None, profile: Mapping[str, Any] | None = None,
                caller_project: str | None = None,
                expect_revision: int | None = None) -> dict[str, Any]:
    """Change the port's own fields, its addresses, groups and options, and its ACTIVE
    binding (``host``, ``profile``)."""
    port = get_port(conn, port_id)
    values = dict(values)
    binding = port["binding"]
    if "vnic_type" in values and values["vnic_type"] != port["vnic_type"] and binding["host"]:
        raise errors.Conflict(f"Cannot change the vNIC type of port {port_id} while it is "
                              f"bound to host {binding['host']}.", "PortBound")
    if "qos_policy_id" in values and values["qos_policy_id"] != port["qos_policy_id"]:
        check_policy_change(conn, port["qos_policy_id"], caller_project)
        check_policy(conn, values["qos_policy_id"], caller_project)
    new_host = binding["host"] if host is None else host
    if new_host != binding["host"] and new_host and binding_row(conn, port_id, new_host):
        raise errors.Conflict(f"Binding for port {port_id} on host {new_host} already exists.",
                              "PortBindingAlreadyExists")
    fixed_ips = values.pop("fixed_ips", None)
    groups = values.pop("security_groups", None)
    given_pairs = values.pop("allowed_address_pairs", None)
    dhcp = values.pop("extra_dhcp_opts", None)
    owner = str(values.get("device_owner", port["device_owner"]))
    if fixed_ips is not None:
        keep = [(a["subnet_id"], a["ip_address"]) for a in port["fixed_ips"]]
        addresses.write(conn, port_id, addresses.plan(
            conn, port["network_id"], port["mac_address"], fixed_ips, keep, owner))
    enabled = bool(values.get("port_security_enabled", port["port_security_enabled"]))
    pairs = port_options.address_pairs(given_pairs, port["mac_address"]) \
        if given_pairs is not None else None
    current_groups = port["security_groups"] if groups is None else groups
    current_pairs = [(p["ip_address"], p["mac_address"])
                     for p in port["allowed_address_pairs"]] if pairs is None else pairs
    if not enabled and current_groups and groups is None:
        raise errors.Conflict("Port has security group associated. Cannot disable port "
                              "security or ip address until security group is removed.",
                              "PortSecurityPortHasSecurityGroup")
    _security(conn, port_id, port["project_id"], caller_project is None, owner, enabled,
              groups, current_pairs, creating=False)
    if pairs is not None:
        port_options.write_pairs(conn, port_id, pairs)
    if dhcp is not None:
        port_options.write_dhcp(conn, port_id, port_options.dhcp_options(dhcp), replace=False)
    vnic_type = values.get("vnic_type", port["vnic_type"])
    admin_up = values.get("admin_state_up", port["admin_state_up"])
    values["status"] = status_for(new_host, admin_up, owner)
    bump(conn, s.ports, port_id, values, expect_revision)
    if not values.get("device_id", port["device_id"]) and \
            not str(values.get("device_owner", port["device_owner"])).startswith("compute:"):
        # Detached from its server: its inactive bindings (a live migration's
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


def set_allocation(conn: Connection, port_id: str, allocation: Any) -> None:
    """Write the ACTIVE binding's ``allocation`` (a QoS change moved what it holds)."""
    port = get_port(conn, port_id)
    profile = dict(port["binding"]["profile"])
    if allocation:
        profile["allocation"] = allocation
    else:
        profile.pop("allocation", None)
    conn.execute(sa.update(s.port_bindings).where(
        s.port_bindings.c.port_id == port_id, s.port_bindings.c.status == ACTIVE).values(
        profile=dumps(profile)))


def delete_port(conn: Connection, port_id: str, *, by_l3: bool = False) -> None:
    port = get_port(conn, port_id)
    if port["device_owner"] in L3_OWNERS and not by_l3:
        raise errors.Conflict(f"Port {port_id} cannot be deleted directly via the port API: "
                              f"has device owner {port['device_owner']}.", "L3PortInUse")
    fip = s.floating_ips
    conn.execute(sa.update(fip).where(fip.c.fixed_port_id == port_id).values(
        fixed_port_id=None, fixed_ip_address=None, router_id=None, status="DOWN",
        updated_at=utcnow(), revision_number=fip.c.revision_number + 1))
    conn.execute(sa.delete(s.ip_allocations).where(s.ip_allocations.c.port_id == port_id))
    conn.execute(sa.delete(s.port_bindings).where(s.port_bindings.c.port_id == port_id))
    conn.execute(sa.delete(s.ports).where(s.ports.c.id == port_id))
    forget_tags(conn, [port_id])


def binding_row(conn: Connection, port_id: str, host: str) -> dict[str, Any] | None:
    row = conn.execute(sa.select(s.port_bindings).where(
        s.port_bindings.c.port_id == port_id, s.port_bindings.c.host == host)).first()
    return dict(row._mapping) if row else None
