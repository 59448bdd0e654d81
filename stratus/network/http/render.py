"""Store rows as Neutron renders them, with what only admins may see left out (the keys
are dropped, not nulled, as Neutron's policy engine does)."""

from __future__ import annotations

from typing import Any

from stratus.network.http.wsgi import Req, timestamp
from stratus.network.model import RULE_TYPES, QosRule, resource_request

ADMIN_PORT_KEYS = ("binding:host_id", "binding:profile", "binding:vif_type",
                   "binding:vif_details", "resource_request")
ADMIN_NETWORK_KEYS = ("provider:network_type", "provider:physical_network",
                      "provider:segmentation_id")


def _owned(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "project_id": row["project_id"], "tenant_id": row["project_id"],
            "tags": list(row.get("tags", ())),
            "created_at": timestamp(row["created_at"]),
            "updated_at": timestamp(row["updated_at"] or row["created_at"]),
            "revision_number": row["revision_number"]}


def network(req: Req, row: dict[str, Any]) -> dict[str, Any]:
    out = _owned(row)
    out.update({
        "admin_state_up": row["admin_state_up"], "status": "ACTIVE",
        "subnets": list(row["subnets"]), "shared": bool(row["shared"] or row.get("granted")),
        "router:external": row["external"], "mtu": row["mtu"],
        "availability_zone_hints": [], "availability_zones": ["nova"],
        "ipv4_address_scope": row.get("scopes", {}).get(4),
        "ipv6_address_scope": row.get("scopes", {}).get(6), "l2_adjacency": True,
        "port_security_enabled": row["port_security_enabled"],
        "qos_policy_id": row["qos_policy_id"], "is_default": row["is_default"],
        "provider:network_type": row["network_type"],
        "provider:physical_network": row["physical_network"],
        "provider:segmentation_id": row["segmentation_id"],
    })
    if not req.is_admin:
        for key in ADMIN_NETWORK_KEYS:
            out.pop(key)
    return out


def subnet(req: Req, row: dict[str, Any]) -> dict[str, Any]:
    out = _owned(row)
    version = row["ip_version"]
    out.update({
        "network_id": row["network_id"], "ip_version": version, "cidr": row["cidr"],
        "gateway_ip": row["gateway_ip"], "enable_dhcp": row["enable_dhcp"],
        "allocation_pools": [p.render(version) for p in row["pools"]],
        "dns_nameservers": list(row["dns_nameservers"]),
        "host_routes": [{"destination": d, "nexthop": h} for d, h in row["host_routes"]],
        "ipv6_address_mode": row["ipv6_address_mode"], "ipv6_ra_mode": row["ipv6_ra_mode"],
        "subnetpool_id": row["subnetpool_id"], "segment_id": None, "service_types": [],
    })
    return out


def port(req: Req, row: dict[str, Any]) -> dict[str, Any]:
    out = _owned(row)
    binding = row["binding"]
    policy = row["qos_policy_id"] or row["qos_network_policy_id"]
    out.update({
        "network_id": row["network_id"], "admin_state_up": row["admin_state_up"],
        "status": row["status"], "mac_address": row["mac_address"],
        "fixed_ips": list(row["fixed_ips"]), "device_id": row["device_id"],
        "device_owner": row["device_owner"], "binding:host_id": binding["host"],
        "binding:vnic_type": row["vnic_type"], "binding:profile": binding["profile"],
        "binding:vif_type": binding["vif_type"], "binding:vif_details": binding["vif_details"],
        "security_groups": list(row["security_groups"]),
        "allowed_address_pairs": list(row["allowed_address_pairs"]),
        "extra_dhcp_opts": list(row["extra_dhcp_opts"]),
        "port_security_enabled": row["port_security_enabled"],
        "qos_policy_id": row["qos_policy_id"],
        "qos_network_policy_id": row["qos_network_policy_id"],
        "resource_request": resource_request(
            row["id"], row["vnic_type"], row["physical_network"], row["network_type"],
            row["rules"] if policy else [], legacy=req.deps.legacy_resource_request),
        "ip_allocation": "immediate", "propagate_uplink_status": False,
    })
    if not req.is_admin:
        for key in ADMIN_PORT_KEYS:
            out.pop(key)
    return out


def binding(row: dict[str, Any]) -> dict[str, Any]:
    return {"host": row["host"], "vif_type": row["vif_type"], "vnic_type": row["vnic_type"],
            "status": row["status"], "profile": row["profile"],
            "vif_details": row["vif_details"]}


def rule(r: QosRule, embedded: bool = False) -> dict[str, Any]:
    """A rule as its own endpoints show it; ``embedded`` (in a policy) adds its type and
    policy, as Neutron does."""
    kind = RULE_TYPES[r.type]
    out: dict[str, Any] = {"id": r.id, kind.value_field: r.value}
    if kind.directions:
        out["direction"] = r.direction
    if kind.burst_field:
        out[kind.burst_field] = r.burst
    if embedded:
        out.update(type=r.type, qos_policy_id=r.policy_id)
    return out


def policy(row: dict[str, Any]) -> dict[str, Any]:
    out = _owned(row)
    out.update({"shared": bool(row["shared"] or row.get("granted")),
                "is_default": row["is_default"],
                "rules": [rule(r, embedded=True) for r in row["rules"]]})
    return out
