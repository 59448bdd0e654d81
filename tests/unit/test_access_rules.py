"""Application credential access rules as the token middleware matches them."""

from __future__ import annotations

import pytest

from stratus.identity.appcreds import AccessRule, permits

RULES = [AccessRule("1", "compute", "/v2.1/servers/*/ips", "GET"),
         AccessRule("2", "image", "/v2/images/**", "GET"),
         AccessRule("3", "compute", "/v2.1/servers", "POST")]


@pytest.mark.parametrize("service, method, path, allowed", [
    ("compute", "GET", "/v2.1/servers/abc/ips", True),
    ("compute", "GET", "/v2.1/servers/abc/ips/", True),
    ("compute", "GET", "/v2.1/servers/abc/def/ips", False),   # * is one segment
    ("compute", "GET", "/v2.1/servers//ips", True),
    ("compute", "PUT", "/v2.1/servers/abc/ips", False),       # the method counts
    ("network", "GET", "/v2.1/servers/abc/ips", False),       # and the service
    ("image", "GET", "/v2/images", True),                     # ** may be nothing
    ("image", "GET", "/v2/images/x/file", True),
    ("image", "GET", "/v2/imagesx", False),
    ("compute", "POST", "/v2.1/servers", True),
    ("compute", "POST", "/v2.1/servers.json", False),         # . is not a wildcard
])
def test_rules_match_as_keystonemiddleware_does(service, method, path, allowed):
    assert permits(RULES, service, method, path) is allowed


def test_no_rules_allow_nothing():
    assert permits([], "compute", "GET", "/") is False
