"""Networks, with their provider segment.

A network is one segment: ``flat`` or ``vlan`` on a physical network, a tunnel
(``vxlan``, ``geneve``, ``gre``) with no physnet, or ``local``. Its physnet is what
its ports' bandwidth requests ask hosts for (design document 004). No two networks
share a segment: the ``segment_key`` column is unique, so two concurrent creators
of one cannot both win.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store import access, rbac
from stratus.network.store.common import Filters, bump, forget_tags, new_id, utcnow, where

NETWORK_TYPES = ("flat", "vlan", "vxlan", "geneve", "gre", "local")
DEFAULT_TYPE = "geneve"
SEGMENT_RANGE = {"vlan": (1, 4094), "vxlan": (1, 16_777_215), "geneve": (1, 16_777_215),
                 "gre": (1, 4_294_967_295 // 2)}
MTU = {"vxlan": 1450, "geneve": 1442, "gre": 1458}
IPV4_MIN_MTU, IPV6_MIN_MTU = 68, 1280


def check_mtu(network_type: str, mtu: int | None) -> None:
    """At most what the network type carries over a 1500-byte physical network (Neutron's
    ML2 with ``global_physnet_mtu`` 1500)."""
    top = MTU.get(network_type, 1500)
    if mtu is not None and mtu > top:
        raise errors.BadRequest(f"Invalid input for operation: Requested MTU is too big, "
                                f"maximum is {top}.", "InvalidInput")


def check_mtu_for_subnets(network_id: str, mtu: int | None, versions: set[int]) -> None:
    """NetworkMTUSubnetConflict (409): an MTU too small for the network's IPv4 (68) or
    IPv6 (1280) subnets (Neutron's _validate_subnet_network_mtu)."""
    if not mtu or mtu >= IPV6_MIN_MTU or not versions:
        return
    need = IPV4_MIN_MTU if mtu < IPV4_MIN_MTU else IPV6_MIN_MTU if 6 in versions else None
    if need is not None:
        raise errors.Conflict(f"MTU of {network_id} is not compatible with subnet, minimum "
                              f"of {need}", "NetworkMTUSubnetConflict")

NETWORK_COLUMNS = {"id": "id", "name": "name", "description": "description",
                   "project_id": "project_id", "tenant_id": "project_id",
                   "admin_state_up": "admin_state_up", "shared": "shared",
                   "router:external": "external", "is_default": "is_default", "mtu": "mtu",
                   "provider:network_type": "network_type",
                   "provider:physical_network": "physical_network",
                   "provider:segmentation_id": "segmentation_id",
                   "qos_policy_id": "qos_policy_id", "revision_number": "revision_number",
                   "port_security_enabled": "port_security_enabled"}
# Ports a network's deletion takes with it (the network's own); any other keeps it.
AUTO_DELETED = ("network:dhcp", "network:floatingip")


# ---- networks ------------------------------------------------------------------------


def _segment(conn: Connection, network_type: str, physnet: str | None,
             segmentation_id: int | None) -> tuple[int | None, str | None]:
    """(segmentation id, segment key) for a new network; 400 or 409 if it cannot be had."""
    if network_type not in NETWORK_TYPES:
        raise errors.BadRequest(f"Invalid input for provider:network_type. Reason: "
                                f"'{network_type}' is not in {list(NETWORK_TYPES)}.",
                                "InvalidInput")
    needs_physnet = network_type in ("flat", "vlan")
    if needs_physnet and not physnet:
        raise errors.BadRequest(f"provider:physical_network is required for {network_type} "
                                "provider network.", "InvalidInput")
    if not needs_physnet and physnet:
        raise errors.BadRequest(f"provider:physical_network specified for {network_type} "
                                "network.", "InvalidInput")
    if network_type in ("flat", "local"):
        if segmentation_id is not None:
            raise errors.BadRequest(f"provider:segmentation_id specified for {network_type} "
                                    "network.", "InvalidInput")
        key = f"flat:{physnet}" if network_type == "flat" else None
        if key and _taken(conn, key):
            raise errors.Conflict(f"Unable to create the flat network. Physical network "
                                  f"{physnet} is in use.", "FlatNetworkInUse")
        return None, key
    low, high = SEGMENT_RANGE[network_type]
    prefix = f"vlan:{physnet}:" if network_type == "vlan" else f"{network_type}:"
    if segmentation_id is None:
        used = {int(k[len(prefix):]) for k in conn.execute(
            sa.select(s.networks.c.segment_key)
            .where(s.networks.c.segment_key.like(prefix + "%"))).scalars()}
        segmentation_id = next(n for n in range(low, low + len(used) + 1) if n not in used)
    if not low <= segmentation_id <= high:
        raise errors.BadRequest(f"Invalid input for provider:segmentation_id. Reason: "
                                f"{segmentation_id} is not in the range {low}-{high} of "
                                f"{network_type}.", "InvalidInput")
    key = f"{prefix}{segmentation_id}"
    if _taken(conn, key):
        where_ = f" on physical network {physnet}" if physnet else ""
        raise errors.Conflict(f"Unable to create the network. The {network_type} segment "
                              f"{segmentation_id}{where_} is in use.", "SegmentInUse")
    return segmentation_id, key


def _taken(conn: Connection, key: str) -> bool:
    return conn.execute(sa.select(s.networks.c.id)
                        .where(s.networks.c.segment_key == key)).first() is not None


def _networks(conn: Connection, query: sa.Select) -> list[dict[str, Any]]:
    rows = [dict(r._mapping) for r in conn.execute(query.order_by(s.networks.c.id))]
    ids = [r["id"] for r in rows]
    subnets: dict[str, list[str]] = {i: [] for i in ids}
    if ids:
        for net, sub in conn.execute(sa.select(s.subnets.c.network_id, s.subnets.c.id)
                                     .where(s.subnets.c.network_id.in_(ids))
                                     .order_by(s.subnets.c.created_at, s.subnets.c.id)):
            subnets[net].append(sub)
    for row in rows:
        row["subnets"] = subnets[row["id"]]
    return rows


def get_network(conn: Connection, network_id: str) -> dict[str, Any]:
    found = _networks(conn, sa.select(s.networks).where(s.networks.c.id == network_id))
    if not found:
        raise errors.not_found("network", network_id)
    return found[0]


def list_networks(conn: Connection, filters: Filters, project_id: str | None
                  ) -> list[dict[str, Any]]:
    """Networks matching ``filters``; a ``project_id`` caller sees its own, shared and
    external ones."""
    t = s.networks
    query = where(sa.select(t), t, filters, NETWORK_COLUMNS)
    if project_id is not None:
        query = query.where(access.network_visible(project_id))
    return _networks(conn, query)


def create_network(conn: Connection, *, project_id: str, network_type: str | None = None,
                   physical_network: str | None = None, segmentation_id: int | None = None,
                   mtu: int | None = None, **values: Any) -> dict[str, Any]:
    network_type = network_type or DEFAULT_TYPE
    check_mtu(network_type, mtu)
    seg, key = _segment(conn, network_type, physical_network, segmentation_id)
    network_id = new_id()
    conn.execute(sa.insert(s.networks).values(
        id=network_id, project_id=project_id, network_type=network_type,
        physical_network=physical_network, segmentation_id=seg, segment_key=key,
        mtu=mtu or MTU.get(network_type, 1500), created_at=utcnow(), **values))
    for flag, action in (("shared", access.SHARED), ("external", access.EXTERNAL)):
        if values.get(flag):
            rbac.set_wildcard(conn, "network", network_id, action, True, project_id)
    return get_network(conn, network_id)


def update_network(conn: Connection, network_id: str, values: dict[str, Any],
                   expect_revision: int | None = None) -> dict[str, Any]:
    network = get_network(conn, network_id)
    if values.get("mtu") is not None:
        check_mtu(network["network_type"], values["mtu"])
        sub = s.subnets
        check_mtu_for_subnets(network_id, values["mtu"], set(conn.execute(
            sa.select(sub.c.ip_version).where(sub.c.network_id == network_id)).scalars()))
    for flag, action in (("shared", access.SHARED), ("external", access.EXTERNAL)):
        if flag in values and values[flag] != network[flag]:
            try:
                rbac.set_wildcard(conn, "network", network_id, action, values[flag],
                                  network["project_id"])
                if flag == "external" and not values[flag]:
                    rbac.withdraw_external(conn, network_id)
            except errors.Conflict:
                if flag == "shared":
                    raise errors.Conflict(
                        f"Unable to reconfigure sharing settings for network {network_id}. "
                        "Multiple tenants are using it.", "InvalidSharedSetting") from None
                raise
    bump(conn, s.networks, network_id, values, expect_revision)
    return get_network(conn, network_id)


def delete_network(conn: Connection, network_id: str) -> None:
    get_network(conn, network_id)
    p = s.ports
    in_use = conn.execute(sa.select(p.c.id).where(
        p.c.network_id == network_id, p.c.device_owner.not_in(AUTO_DELETED)).limit(1)
    ).scalar()
    if in_use is not None:
        raise errors.Conflict(f"Unable to complete operation on network {network_id}. There "
                              "are one or more ports still in use on the network.",
                              "NetworkInUse")
    fip = s.floating_ips
    forget_tags(conn, sa.select(fip.c.id).where(fip.c.floating_network_id == network_id))
    forget_tags(conn, sa.select(p.c.id).where(p.c.network_id == network_id))
    forget_tags(conn, sa.select(s.subnets.c.id).where(s.subnets.c.network_id == network_id))
    forget_tags(conn, [network_id])
    conn.execute(sa.delete(fip).where(fip.c.floating_network_id == network_id))
    conn.execute(sa.delete(p).where(p.c.network_id == network_id))
    conn.execute(sa.delete(s.subnets).where(s.subnets.c.network_id == network_id))
    rbac.delete_for(conn, "network", network_id)
    conn.execute(sa.delete(s.networks).where(s.networks.c.id == network_id))
