"""Security group rules as Neutron checks them (stratus.network.secgroup_rules)."""

from __future__ import annotations

import pytest

from stratus.network import errors
from stratus.network import secgroup_rules as rules


def rule(**kw: object) -> rules.Rule:
    values: dict[str, object] = {"direction": "ingress", "ethertype": "IPv4", "protocol": None,
                                 "port_range_min": None, "port_range_max": None,
                                 "remote_ip_prefix": None, "remote_group_id": None,
                                 "remote_address_group_id": None}
    values.update(kw)
    return rules.Rule(**values)  # type: ignore[arg-type]


def test_protocols_by_name_number_or_any() -> None:
    assert rules.protocol("TCP") == "tcp"
    assert rules.protocol(17) == "17"
    assert rules.protocol("any") is None and rules.protocol(None) is None
    for bad in ("bad_protocol_name", 256, -1, True):
        with pytest.raises(errors.BadRequest) as refused:
            rules.protocol(bad)
        assert refused.value.type == "SecurityGroupRuleInvalidProtocol"


@pytest.mark.parametrize("proto,low,high,words", [
    ("tcp", 80, 79, "port_range_min must be <= port_range_max"),
    ("tcp", None, 6, "port_range_min must be <= port_range_max"),
    ("tcp", 0, 5, "Invalid value for port 0"),
    ("icmp", 1, 256, "Invalid value for ICMP code"),
    ("icmp", 300, 1, "Invalid value for ICMP type"),
    ("icmp", None, 6, "ICMP type (port-range-min) is missing"),
    ("gre", 1, 2, "Ports cannot be specified for protocol 47"),
    (None, 1, 2, "Must also specify protocol"),
])
def test_port_ranges_are_checked_per_protocol(proto, low, high, words) -> None:
    with pytest.raises(errors.BadRequest) as refused:
        rules.check(rule(protocol=proto, port_range_min=low, port_range_max=high))
    assert words in refused.value.message


def test_canonical_forms() -> None:
    whole = rules.check(rule(protocol="tcp", port_range_min=1, port_range_max=65535))
    assert (whole.port_range_min, whole.port_range_max) == (None, None)
    legacy = rules.check(rule(ethertype="IPv6", protocol="icmp"))
    assert legacy.protocol == "ipv6-icmp"
    with pytest.raises(errors.BadRequest) as conflict:
        rules.check(rule(ethertype="IPv6", remote_ip_prefix="10.0.0.0/8"))
    assert conflict.value.type == "SecurityGroupRuleParameterConflict"
    with pytest.raises(errors.BadRequest):
        rules.check(rule(remote_ip_prefix="10.0.0.0/8", remote_group_id="g"))
    assert rules.prefix("192.168.1.10/24") == "192.168.1.10/24"
    assert rules.normalized("192.168.1.10/24") == "192.168.1.0/24"
    for bad in ("192.168.1./24", "192.168.1.1/33", "bad_prefix", "256"):
        with pytest.raises(errors.BadRequest):
            rules.prefix(bad)


def test_the_same_rule_has_the_same_key_whatever_its_spelling() -> None:
    by_name = rules.check(rule(protocol=rules.protocol("udp"), port_range_min=53,
                               port_range_max=53))
    by_number = rules.check(rule(protocol=rules.protocol(17), port_range_min=53,
                                 port_range_max=53))
    assert rules.key("g", by_name) == rules.key("g", by_number)
    anywhere = rules.check(rule(remote_ip_prefix="0.0.0.0/0"))
    assert rules.key("g", anywhere) == rules.key("g", rules.check(rule()))
    assert rules.key("g", by_name) != rules.key("h", by_name)
    assert len(rules.key("0" * 36, rules.check(rule(
        ethertype="IPv6", protocol="tcp", port_range_min=1, port_range_max=2,
        remote_ip_prefix="ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128")))) < 255
