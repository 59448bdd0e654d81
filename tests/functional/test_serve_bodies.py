"""Request bodies over each API's limit, through ``stratus serve``'s own HTTP servers.

Every API of serve but the image API (whose uploads stream to disk) is given its whole
body by ``WSGIBridge``, read only up to the API's limit: a larger body, declared or
chunked (no Content-Length), is answered 413 in the API's own error format, and the
same connection's next request is served.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from stratus.allinone.cloud import AllInOne
from stratus.identity.http.app import MAX_BODY_BYTES as IDENTITY_LIMIT
from tests.functional.serve_helpers import running_serve

HEADERS = {"X-Auth-Token": "admin", "Content-Type": "application/json"}
LIMIT = 4096   # [api_server] max_body_bytes, small so the test sends little

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AllInOne]:
    with running_serve(tmp_path_factory.mktemp("serve-bodies"), prefix="bodies",
                       overrides={("api_server", "max_body_bytes"): LIMIT}) as served:
        yield served


def _post(conn: http.client.HTTPConnection, path: str, body: bytes,
          chunked: bool) -> tuple[int, bytes]:
    conn.request("POST", path, body=iter([body]) if chunked else body, headers=HEADERS,
                 encode_chunked=chunked)
    resp = conn.getresponse()
    return resp.status, resp.read()


# (the served URL's attribute, a POST path under it, a GET path under it, the limit,
# how the API's error body says 413)
APIS = {
    "compute": ("api_url", "servers", "flavors", LIMIT,
                lambda doc: doc["overLimit"]["code"] == 413),
    "placement": ("placement_url", "resource_providers", "resource_providers", LIMIT,
                  lambda doc: doc["errors"][0]["status"] == 413),
    "network": ("network_url", "v2.0/ports", "v2.0/networks", LIMIT,
                lambda doc: "NeutronError" in doc),
    "identity": ("identity_url", "auth/tokens", "", IDENTITY_LIMIT,
                 lambda doc: doc["error"]["code"] == 413),
}


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
@pytest.mark.parametrize("name", sorted(APIS))
def test_a_body_over_the_limit_is_413_in_the_apis_format(cloud, name, chunked):
    attribute, post, get, limit, says_413 = APIS[name]
    root = urlsplit(getattr(cloud, attribute).rstrip("/") + "/")
    conn = http.client.HTTPConnection(root.hostname, root.port, timeout=30)
    try:
        big = json.dumps({"padding": "x" * (2 * limit)}).encode()
        status, body = _post(conn, root.path + post, big, chunked)
        assert status == 413, (status, body[:300])
        assert says_413(json.loads(body)), body[:300]
        # The connection still serves: nothing of the big body is left in it.
        conn.request("GET", root.path + get, headers=HEADERS)
        answer = conn.getresponse()
        answer.read()
        assert answer.status < 400, answer.status
    finally:
        conn.close()
