"""What a port carries besides its addresses: allowed address pairs (other addresses
its traffic may come from; they need port security on) and extra DHCP options."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.store.addresses import MAC

MAX_PAIRS = 10


def address_pairs(given: Any, port_mac: str) -> list[tuple[str, str]]:
    """(ip or cidr, mac) pairs, checked; a pair without a MAC takes the port's."""
    if given is None:
        return []
    if not isinstance(given, list):
        raise errors.BadRequest(f"Invalid input for allowed_address_pairs. Reason: '{given}' "
                                "is not a list.", "HTTPBadRequest")
    if len(given) > MAX_PAIRS:
        raise errors.BadRequest(f"The number of allowed address pair exceeds the maximum "
                                f"{MAX_PAIRS}.", "AllowedAddressPairExhausted")
    out: list[tuple[str, str]] = []
    for item in given:
        if not isinstance(item, dict) or "ip_address" not in item or \
                set(item) - {"ip_address", "mac_address"}:
            raise errors.BadRequest("Allowed address pairs must be a list of dictionaries with "
                                    "an ip_address (and optionally a mac_address).",
                                    "AllowedAddressPairsMissingIP")
        try:
            ip = str(ipaddress.ip_interface(str(item["ip_address"])))
        except ValueError:
            raise errors.BadRequest(f"Invalid input for allowed_address_pairs. Reason: "
                                    f"'{item['ip_address']}' is not a valid IP address.",
                                    "HTTPBadRequest") from None
        if ip.endswith("/32") or ip.endswith("/128"):
            ip = ip.rsplit("/", 1)[0]
        mac = str(item.get("mac_address") or port_mac).lower()
        if not MAC.fullmatch(mac):
            raise errors.BadRequest(f"Invalid input for allowed_address_pairs. Reason: "
                                    f"'{item.get('mac_address')}' is not a valid MAC address.",
                                    "HTTPBadRequest")
        if (ip, mac) in out:
            raise errors.BadRequest("Request contains duplicate address pair: mac_address "
                                    f"{mac} ip_address {ip}.", "DuplicateAddressPairInRequest")
        out.append((ip, mac))
    return out


def dhcp_options(given: Any) -> list[tuple[str, str, int]]:
    if given is None:
        return []
    if not isinstance(given, list):
        raise errors.BadRequest(f"Invalid input for extra_dhcp_opts. Reason: '{given}' is not "
                                "a list.", "HTTPBadRequest")
    out: list[tuple[str, str, int]] = []
    for item in given:
        if not isinstance(item, dict) or not item.get("opt_name") or \
                set(item) - {"opt_name", "opt_value", "ip_version"}:
            raise errors.BadRequest(f"Invalid input for extra_dhcp_opts. Reason: Invalid data "
                                    f"format for extra-dhcp-opt: {item}.", "HTTPBadRequest")
        version = item.get("ip_version", 4)
        if version not in (4, 6, "4", "6"):
            raise errors.BadRequest(f"Invalid input for extra_dhcp_opts. Reason: ip_version "
                                    f"{version} is not 4 or 6.", "HTTPBadRequest")
        value = item.get("opt_value")
        out.append((str(item["opt_name"])[:64], "" if value is None else str(value)[:255],
                    int(version)))
    return out


def write_pairs(conn: Connection, port_id: str, pairs: Sequence[tuple[str, str]]) -> None:
    t = s.allowed_address_pairs
    conn.execute(sa.delete(t).where(t.c.port_id == port_id))
    if pairs:
        conn.execute(sa.insert(t), [{"port_id": port_id, "ip_address": ip, "mac_address": mac}
                                    for ip, mac in pairs])


def write_dhcp(conn: Connection, port_id: str, options: Sequence[tuple[str, str, int]],
               replace: bool) -> None:
    """Set ``options``; an option with no value is removed (Neutron's way to drop one).
    ``replace`` (a create) starts from none."""
    t = s.extra_dhcp_opts
    if replace:
        conn.execute(sa.delete(t).where(t.c.port_id == port_id))
    for name, value, version in options:
        conn.execute(sa.delete(t).where(t.c.port_id == port_id, t.c.opt_name == name,
                                        t.c.ip_version == version))
        if value:
            conn.execute(sa.insert(t).values(port_id=port_id, opt_name=name, opt_value=value,
                                             ip_version=version))


def of_ports(conn: Connection, port_ids: Sequence[str]
             ) -> tuple[dict[str, list[dict[str, str]]], dict[str, list[dict[str, Any]]]]:
    """(address pairs, DHCP options) of each port."""
    pairs: dict[str, list[dict[str, str]]] = {p: [] for p in port_ids}
    options: dict[str, list[dict[str, Any]]] = {p: [] for p in port_ids}
    if port_ids:
        ids = list(port_ids)
        t = s.allowed_address_pairs
        for row in conn.execute(sa.select(t).where(t.c.port_id.in_(ids))
                                .order_by(t.c.ip_address, t.c.mac_address)):
            pairs[row.port_id].append({"ip_address": row.ip_address,
                                       "mac_address": row.mac_address})
        d = s.extra_dhcp_opts
        for row in conn.execute(sa.select(d).where(d.c.port_id.in_(ids))
                                .order_by(d.c.opt_name, d.c.ip_version)):
            options[row.port_id].append({"opt_name": row.opt_name, "opt_value": row.opt_value,
                                         "ip_version": row.ip_version})
    return pairs, options
