"""Security group rules as Neutron checks them: protocols, port ranges, ICMP type and code,
remote prefixes, and what makes two rules the same rule. Pure functions.

On simulated hosts a rule filters no packet; it is still a record a user can count on:
refused with Neutron's words when Neutron would refuse it, and unique within its group
(the same rule twice is 409 ``SecurityGroupRuleExists``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from stratus.network import errors

PROTOCOLS = {"ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1,
             "igmp": 2, "ip": 0, "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44,
             "ipv6-icmp": 58, "icmpv6": 58, "ipv6-nonxt": 59, "ipv6-opts": 60,
             "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46, "sctp": 132, "tcp": 6,
             "udp": 17, "udplite": 136, "vrrp": 112}
NUMBER_NAMES = {str(n): name for name, n in PROTOCOLS.items() if name != "icmpv6"}
PORT_PROTOCOLS = {6, 17, 33, 132, 136}
ICMP_PROTOCOLS = {1, 58}
IPV6_ONLY = {"ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts",
             "ipv6-route", "41", "44", "58", "59", "60", "43"}
ANY = (None, "any")
ETHERTYPES = ("IPv4", "IPv6")
DIRECTIONS = ("ingress", "egress")


def _invalid(message: str, type_: str) -> errors.BadRequest:
    return errors.BadRequest(message, type_)


def protocol(value: Any) -> str | None:
    """The protocol as Neutron stores it: None for any, a known name, or a number 0-255
    as text."""
    if value in ANY:
        return None
    known = ", ".join([str(a) for a in ANY] + sorted(PROTOCOLS))
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        number = int(value)
        if 0 <= number <= 255:
            return str(number)
    elif isinstance(value, str) and value.lower() in PROTOCOLS:
        return value.lower()
    raise _invalid(f"Security group rule protocol {value} not supported. Only protocol "
                   f"values [{known}] and integer representations [0 to 255] are supported.",
                   "SecurityGroupRuleInvalidProtocol")


def ethertype(value: Any) -> str:
    if isinstance(value, str):
        for known in ETHERTYPES:
            if known.lower() == value.lower():
                return known
    raise _invalid(f"Security group rule for ethertype '{value}' not supported. Allowed "
                   f"values are {list(ETHERTYPES)}.", "SecurityGroupRuleInvalidEtherType")


def port(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)) or \
            not str(value).strip().lstrip("-").isdigit():
        raise _invalid(f"Invalid value for port {value}", "SecurityGroupInvalidPortValue")
    number = int(value)
    if not 0 <= number <= 65535:
        raise _invalid(f"Invalid value for port {value}", "SecurityGroupInvalidPortValue")
    return number


def prefix(value: Any) -> str | None:
    if value in (None, ""):
        return None
    try:
        # As given, with its length (Neutron keeps host bits; normalized_cidr drops them).
        return str(ipaddress.ip_interface(str(value)))
    except ValueError:
        raise _invalid(f"'{value}' is not a valid IP subnet.", "InvalidCIDR") from None


def normalized(remote_ip_prefix: str | None) -> str | None:
    if remote_ip_prefix is None:
        return None
    return str(ipaddress.ip_interface(remote_ip_prefix).network)


def number(proto: str | None) -> int | None:
    if proto is None:
        return None
    return int(proto) if proto.isdigit() else PROTOCOLS[proto]


@dataclass
class Rule:
    """A rule's matching fields, checked and in Neutron's canonical form."""

    direction: str
    ethertype: str
    protocol: str | None
    port_range_min: int | None
    port_range_max: int | None
    remote_ip_prefix: str | None
    remote_group_id: str | None
    remote_address_group_id: str | None


def check(rule: Rule) -> Rule:
    """Neutron's checks and canonical forms, in its order: legacy IPv6 ICMP names, the
    whole port range as no range, port or ICMP ranges, the prefix against the
    ethertype, IPv6-only protocols, at most one remote."""
    if rule.ethertype == "IPv6":
        if rule.protocol in ("icmp", "icmpv6"):
            rule.protocol = "ipv6-icmp"
        elif rule.protocol == "1":
            rule.protocol = "58"
    if rule.port_range_min == 1 and rule.port_range_max == 65535:
        rule.port_range_min = rule.port_range_max = None
    _check_ports(rule)
    if rule.remote_ip_prefix is not None:
        version = ipaddress.ip_interface(rule.remote_ip_prefix).version
        if rule.ethertype != f"IPv{version}":
            raise _invalid(f"Conflicting value ethertype {rule.ethertype} for CIDR "
                           f"{rule.remote_ip_prefix}", "SecurityGroupRuleParameterConflict")
    if rule.protocol in IPV6_ONLY and rule.ethertype == "IPv4":
        raise _invalid(f"Invalid ethertype {rule.ethertype} for protocol {rule.protocol}.",
                       "SecurityGroupEthertypeConflictWithProtocol")
    remotes = [r for r in (rule.remote_ip_prefix, rule.remote_group_id,
                           rule.remote_address_group_id) if r]
    if len(remotes) > 1:
        raise _invalid("Only one of remote_ip_prefix or remote_group_id or "
                       "remote_address_group_id may be provided.",
                       "SecurityGroupMultipleRemoteEntites")
    return rule


def _check_ports(rule: Rule) -> None:
    low, high = rule.port_range_min, rule.port_range_max
    if low is None and high is None:
        return
    if rule.protocol is None:
        raise _invalid("Must also specify protocol if port range is given.",
                       "SecurityGroupProtocolRequiredWithPorts")
    proto = number(rule.protocol)
    if proto in PORT_PROTOCOLS:
        if low == 0 or high == 0:
            raise _invalid("Invalid value for port 0", "SecurityGroupInvalidPortValue")
        if low is None or high is None or low > high:
            raise _invalid("For TCP/UDP protocols, port_range_min must be <= port_range_max",
                           "SecurityGroupInvalidPortRange")
    elif proto in ICMP_PROTOCOLS:
        for value, field, attr in ((low, "type", "port_range_min"),
                                   (high, "code", "port_range_max")):
            if value is not None and not 0 <= value <= 255:
                raise _invalid(f"Invalid value for ICMP {field} ({attr}) {value}. It must be "
                               "0 to 255.", "SecurityGroupInvalidIcmpValue")
        if low is None and high is not None:
            raise _invalid(f"ICMP code (port-range-max) {high} is provided but ICMP type "
                           "(port-range-min) is missing.", "SecurityGroupMissingIcmpType")
    else:
        raise _invalid(f"Ports cannot be specified for protocol {proto}. Ports are only "
                       "supported for DCCP, SCTP, TCP, UDP, UDPLITE.",
                       "SecurityGroupInvalidProtocolForPort")


def key(security_group_id: str, rule: Rule) -> str:
    """What makes two rules of a group the same rule (Neutron's ``_rule_to_key``): a
    protocol compares by its name and number together, any-address prefixes as none."""
    def text(value: Any) -> str:
        return "+" if value is None else str(value)

    proto = None
    if rule.protocol is not None:
        name = NUMBER_NAMES.get(rule.protocol, rule.protocol)
        proto = f"{name}/{number(rule.protocol)}"
    remote = rule.remote_ip_prefix
    if remote in ("0.0.0.0/0", "::/0"):
        remote = None
    return "_".join(text(v) for v in (
        rule.direction, rule.ethertype, rule.port_range_max, rule.port_range_min, proto,
        rule.remote_group_id, rule.remote_address_group_id, remote, security_group_id))
