"""accessIPv4 and accessIPv6 as Nova's schemas check them (``format: ipv4/ipv6``)."""

from __future__ import annotations

import ipaddress

from stratus.api.store.errors import BadRequest


def access_ip(value: str, version: int, field: str) -> str:
    """The address if it is one of IP ``version`` (400 naming ``field`` otherwise)."""
    try:
        parsed = ipaddress.ip_address(value)
    except ValueError:
        parsed = None
    if parsed is None or parsed.version != version:
        raise BadRequest(f"Invalid input for field/attribute {field}. Value: {value}. "
                         f"'{value}' is not a 'ipv{version}'")
    return value
