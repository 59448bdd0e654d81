"""Request bodies of the network API: each resource's attributes, who may set them, and how
each value is checked, in one table per resource (Neutron's attribute maps, reduced to
what Stratus keeps).

A body is ``{"<member>": {attribute: value}}``. An attribute the resource does not
have is refused ("Unrecognized attribute(s)"), as is one that may not be written by
this request (a read-only one, one only allowed at creation, or an admin-only one
for a non-admin), each with Neutron's words.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stratus.network import errors
from stratus.network.model import RULE_TYPES

Check = Callable[[str, Any], Any]
MAX_INT = 2_147_483_647


def _bad(name: str, reason: str) -> errors.BadRequest:
    return errors.BadRequest(f"Invalid input for {name}. Reason: {reason}.", "HTTPBadRequest")


def string(max_len: int = 255, nullable: bool = False) -> Check:
    def check(name: str, value: Any) -> Any:
        if value is None and nullable:
            return None
        if not isinstance(value, str):
            raise _bad(name, f"'{value}' is not a valid string")
        if len(value) > max_len:
            raise _bad(name, f"'{value[:40]}...' exceeds maximum length of {max_len}")
        return value
    return check


def name_text(name: str, value: Any) -> Any:
    return string()(name, "" if value is None else value)


def boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _bad(name, f"'{value}' cannot be converted to boolean")


def integer(low: int = 0, high: int = MAX_INT, nullable: bool = False) -> Check:
    def check(name: str, value: Any) -> Any:
        if value is None and nullable:
            return None
        number = value
        if isinstance(value, str) and re.fullmatch(r"-?\d{1,19}", value.strip()):
            number = int(value)
        if isinstance(number, bool) or not isinstance(number, int):
            raise errors.BadRequest(f"Invalid input for operation: '{value}' is not an "
                                    "integer.", "InvalidInput")
        if number < low:
            raise _bad(name, f"'{value}' is too small - must be at least '{low}'")
        if number > high:
            raise _bad(name, f"'{value}' is too large - must be no larger than '{high}'")
        return number
    return check


UUID_TEXT = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                       r"[0-9a-fA-F]{12}$")


def is_uuid(value: Any) -> bool:
    return isinstance(value, str) and bool(UUID_TEXT.fullmatch(value))


def uuid_value(nullable: bool = False) -> Check:
    def check(name: str, value: Any) -> Any:
        if value is None and nullable:
            return None
        if not is_uuid(value):
            raise _bad(name, f"'{value}' is not a valid UUID")
        return str(uuid.UUID(value))
    return check


def one_of(*choices: str | int) -> Check:
    def check(name: str, value: Any) -> Any:
        # Neutron converts an integer attribute (ip_version) given as text first.
        if isinstance(value, str) and any(isinstance(c, int) for c in choices) and \
                re.fullmatch(r"-?\d{1,19}", value.strip()):
            value = int(value)
        if value not in choices:
            raise _bad(name, f"{value} is not in {list(choices)}")
        return value
    return check


def mapping(max_len: int = 4095) -> Check:
    """A JSON object (a binding profile), at most ``max_len`` characters as JSON."""
    import json

    def check(name: str, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise _bad(name, f"'{value}' is not a dictionary")
        if len(json.dumps(value)) > max_len:
            raise _bad(name, f"it exceeds {max_len} characters as JSON")
        return value
    return check


def fixed_ips(name: str, value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(i, dict) for i in value):
        raise _bad(name, f"Invalid data format for fixed IP: '{value}'")
    out = []
    for item in value:
        unknown = set(item) - {"subnet_id", "ip_address"}
        if unknown or not item:
            raise _bad(name, f"Invalid data format for fixed IP: '{item}'")
        entry: dict[str, Any] = {}
        if "subnet_id" in item:
            entry["subnet_id"] = uuid_value()(f"{name} subnet_id", item["subnet_id"])
        if "ip_address" in item:
            entry["ip_address"] = string(64)(f"{name} ip_address", item["ip_address"])
        out.append(entry)
    return out


def raw(name: str, value: Any) -> Any:
    """Checked where it is used (a subnet's pools, a port's address pairs)."""
    return value


def uuid_list(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(name, f"'{value}' is not a list")
    ids = [uuid_value()(name, v) for v in value]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:   # Neutron's _validate_list_of_items
        raise _bad(name, f"Duplicate items in the list: '{', '.join(twice)}'")
    return ids


def nullable_one_of(*choices: str) -> Check:
    def check(name: str, value: Any) -> Any:
        return None if value is None else one_of(*choices)(name, value)
    return check


def nullable_pool_id(name: str, value: Any) -> Any:
    """A subnet pool's id, or ``prefix_delegation`` (refused later: not served)."""
    return None if value is None else uuid_value()(name, value)


def _empty(name: str, value: Any, only: Any) -> Any:
    if value not in (only, None):
        raise _bad(name, f"{name} {value!r} is not supported here")
    return only


IPV6_MODES = ("dhcpv6-stateful", "dhcpv6-stateless", "slaac")
VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical",
              "virtio-forwarder", "smart-nic", "vdpa", "remote-managed")


@dataclass(frozen=True)
class Attr:
    check: Check
    post: bool = True          # may be given at creation
    put: bool = True           # may be changed later
    admin: bool = False        # only an admin (or the service role) may write it
    column: str | None = None  # the store's name, when it differs


def _attrs(**table: Attr) -> dict[str, Attr]:
    return table


COMMON = {"name": Attr(name_text), "description": Attr(name_text),
          "project_id": Attr(string(255), put=False, admin=True),
          "tenant_id": Attr(string(255), put=False, admin=True, column="project_id")}

NETWORK = _attrs(
    **COMMON,
    admin_state_up=Attr(boolean), shared=Attr(boolean, admin=True),
    **{"router:external": Attr(boolean, admin=True, column="external"),
       "provider:network_type": Attr(one_of("flat", "vlan", "vxlan", "geneve", "gre", "local"),
                                     put=False, admin=True, column="network_type"),
       "provider:physical_network": Attr(string(64, nullable=True), put=False, admin=True,
                                         column="physical_network"),
       "provider:segmentation_id": Attr(integer(0, MAX_INT, nullable=True), put=False,
                                        admin=True, column="segmentation_id")},
    mtu=Attr(integer(0, 9216)), qos_policy_id=Attr(uuid_value(nullable=True)),
    port_security_enabled=Attr(boolean), is_default=Attr(boolean, admin=True),
    availability_zone_hints=Attr(lambda n, v: _empty_list(n, v), put=False),
)

SUBNET = _attrs(
    **COMMON,
    network_id=Attr(uuid_value(), put=False), ip_version=Attr(one_of(4, 6), put=False),
    cidr=Attr(string(64), put=False), gateway_ip=Attr(raw),
    enable_dhcp=Attr(boolean), allocation_pools=Attr(raw), dns_nameservers=Attr(raw),
    host_routes=Attr(raw),
    ipv6_ra_mode=Attr(nullable_one_of(*IPV6_MODES)),
    ipv6_address_mode=Attr(nullable_one_of(*IPV6_MODES)),
    subnetpool_id=Attr(nullable_pool_id, put=False),
    prefixlen=Attr(integer(0, 128), put=False), use_default_subnetpool=Attr(boolean, put=False),
    segment_id=Attr(lambda n, v: _empty(n, v, None), put=False),
    service_types=Attr(lambda n, v: _empty(n, v, [])),
    dns_publish_fixed_ip=Attr(lambda n, v: _empty(n, v, False)),
)

PORT = _attrs(
    **COMMON,
    network_id=Attr(uuid_value(), put=False), admin_state_up=Attr(boolean),
    mac_address=Attr(string(32), put=False), fixed_ips=Attr(fixed_ips),
    security_groups=Attr(uuid_list), allowed_address_pairs=Attr(raw),
    extra_dhcp_opts=Attr(raw),
    device_id=Attr(string(255)), device_owner=Attr(string(255)),
    qos_policy_id=Attr(uuid_value(nullable=True)), port_security_enabled=Attr(boolean),
    **{"binding:vnic_type": Attr(one_of(*VNIC_TYPES), column="vnic_type"),
       "binding:host_id": Attr(string(255, nullable=True), admin=True, column="host"),
       "binding:profile": Attr(mapping(), admin=True, column="profile")},
)

POLICY = _attrs(**COMMON, shared=Attr(boolean), is_default=Attr(boolean))

BINDING = _attrs(host=Attr(string(255), put=False),
                 vnic_type=Attr(one_of(*VNIC_TYPES)), profile=Attr(mapping()))


def _empty_list(name: str, value: Any) -> list[Any]:
    if value not in ([], None):
        raise _bad(name, "availability zone hints are not supported here")
    return []


def rule_attrs(rule_type: str) -> dict[str, Attr]:
    kind = RULE_TYPES[rule_type]
    check = one_of(*kind.choices) if kind.choices else integer(0, kind.value_max)
    table = {kind.value_field: Attr(check)}
    if kind.directions:
        table["direction"] = Attr(one_of(*kind.directions))
    if kind.burst_field:
        table[kind.burst_field] = Attr(integer(0, MAX_INT))
    return table


def parse(body: Any, member: str, table: Mapping[str, Attr], *, creating: bool,
          is_admin: bool, caller: str | None = None) -> dict[str, Any]:
    """The checked attributes of ``body[member]``, keyed by store column name. A
    non-admin ``caller`` may name its own project; another is 400 (Neutron's
    populate_project_id)."""
    if not isinstance(body, dict) or not body:
        raise errors.BadRequest("Resource body required", "HTTPBadRequest")
    if member not in body or len(body) != 1:
        raise errors.BadRequest(f"Unable to find '{member}' in request body", "HTTPBadRequest")
    data = body[member]
    if not isinstance(data, dict):
        raise errors.BadRequest(f"Invalid input for {member}. Reason: it must be an object.",
                                "HTTPBadRequest")
    unknown = sorted(str(k) for k in data if k not in table)
    if unknown:
        raise errors.BadRequest(f"Unrecognized attribute(s) '{', '.join(unknown)}'",
                                "HTTPBadRequest")
    out: dict[str, Any] = {}
    for name, value in data.items():
        attr = table[name]
        if creating and not attr.post:
            raise errors.BadRequest(f"Attribute '{name}' not allowed in POST",
                                    "HTTPBadRequest")
        if not creating and not attr.put:
            raise errors.BadRequest(f"Cannot update read-only attribute {name}",
                                    "HTTPBadRequest")
        out[attr.column or name] = attr.check(name, value)
    # Policy after validation, as Neutron's API layer orders them (a bad value is 400
    # whoever sends it).
    for name in data:
        if name in ("project_id", "tenant_id") and not is_admin and caller is not None:
            if data[name] != caller:
                raise errors.BadRequest("Specifying 'project_id' or 'tenant_id' other than "
                                        "the authenticated project in request requires admin "
                                        "privileges", "HTTPBadRequest")
            continue
        if table[name].admin and not is_admin:
            raise errors.Forbidden(f"(rule:{'create' if creating else 'update'}_{member}:"
                                   f"{name}) is disallowed by policy", "PolicyNotAuthorized")
    return out


SECURITY_GROUP = _attrs(**COMMON, stateful=Attr(boolean))

# The rule's values are checked together by secgroup_rules (their words, their order).
SECURITY_GROUP_RULE = _attrs(
    project_id=Attr(string(255), put=False, admin=True),
    tenant_id=Attr(string(255), put=False, admin=True, column="project_id"),
    description=Attr(name_text),
    security_group_id=Attr(string(36), put=False),
    remote_group_id=Attr(string(36, nullable=True), put=False),
    remote_address_group_id=Attr(uuid_value(nullable=True), put=False),
    direction=Attr(one_of("ingress", "egress"), put=False),
    protocol=Attr(raw, put=False), ethertype=Attr(raw, put=False),
    port_range_min=Attr(raw, put=False), port_range_max=Attr(raw, put=False),
    remote_ip_prefix=Attr(raw, put=False),
)

RBAC_POLICY = _attrs(
    project_id=Attr(string(255), put=False, admin=True),
    tenant_id=Attr(string(255), put=False, admin=True, column="project_id"),
    object_type=Attr(string(255), put=False), object_id=Attr(uuid_value(), put=False),
    target_tenant=Attr(string(255), column="target_project"),
    target_project=Attr(string(255)),
    action=Attr(string(255), put=False),
)

SUBNET_POOL = _attrs(
    **COMMON,
    prefixes=Attr(raw), ip_version=Attr(one_of(4, 6), put=False),
    default_prefixlen=Attr(integer(0, 128)), min_prefixlen=Attr(integer(0, 128)),
    max_prefixlen=Attr(integer(0, 128)), shared=Attr(boolean, admin=True, put=False),
    is_default=Attr(boolean, admin=True), default_quota=Attr(integer(0, nullable=True)),
    address_scope_id=Attr(uuid_value(nullable=True)),
)

ADDRESS_SCOPE = _attrs(**COMMON, ip_version=Attr(one_of(4, 6), put=False),
                       shared=Attr(boolean, admin=True))

ROUTER = _attrs(
    **COMMON,
    admin_state_up=Attr(boolean), external_gateway_info=Attr(raw), routes=Attr(raw),
    # Neutron's extensions Stratus does not serve, refused with a word on why.
    distributed=Attr(lambda n, v: _empty(n, v, False), admin=True),
    ha=Attr(lambda n, v: _empty(n, v, False), admin=True),
    availability_zone_hints=Attr(lambda n, v: _empty_list(n, v), put=False),
)

FLOATING_IP = _attrs(
    project_id=Attr(string(255), put=False, admin=True),
    tenant_id=Attr(string(255), put=False, admin=True, column="project_id"),
    description=Attr(name_text),
    floating_network_id=Attr(uuid_value(), put=False),
    port_id=Attr(uuid_value(nullable=True)),
    fixed_ip_address=Attr(string(64, nullable=True)),
    floating_ip_address=Attr(string(64, nullable=True), put=False, admin=True),
    subnet_id=Attr(uuid_value(nullable=True), put=False),
)

METERING_LABEL = _attrs(**COMMON, shared=Attr(boolean))

METERING_LABEL_RULE = _attrs(
    metering_label_id=Attr(uuid_value(), put=False),
    direction=Attr(one_of("ingress", "egress"), put=False),
    excluded=Attr(boolean, put=False),
    remote_ip_prefix=Attr(string(64, nullable=True), put=False),
    source_ip_prefix=Attr(string(64, nullable=True), put=False),
    destination_ip_prefix=Attr(string(64, nullable=True), put=False),
    project_id=Attr(string(255), put=False, admin=True),
    tenant_id=Attr(string(255), put=False, admin=True, column="project_id"),
)
