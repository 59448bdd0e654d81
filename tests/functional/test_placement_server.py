"""``stratus placement-api`` over real sockets: what the server in front of the app adds.

The WSGI app is served by uvicorn through ``stratus.web.wsgi_bridge``; these
check the parts the in-process tests cannot see: bodies arriving in pieces,
chunked bodies, the body-size cap, large answers, keep-alive.
"""

from __future__ import annotations

import http.client
import json
import uuid

import pytest

from tests.functional.cli_helpers import server

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}

pytestmark = pytest.mark.timeout(120)


def _request(conn: http.client.HTTPConnection, method: str, path: str,
             body: bytes | None = None, headers: dict[str, str] | None = None,
             chunked: bool = False) -> tuple[int, bytes]:
    conn.request(method, path, body=iter([body]) if chunked and body else body,
                 headers={**HEADERS, **(headers or {})}, encode_chunked=chunked)
    resp = conn.getresponse()
    return resp.status, resp.read()


def test_requests_over_one_connection(tmp_path):
    with server(tmp_path, "--db", f"sqlite:///{tmp_path}/p.db", "--workers", "1") as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        rp = str(uuid.uuid4())
        status, _ = _request(conn, "POST", "/resource_providers",
                             json.dumps({"name": "host-a", "uuid": rp}).encode(),
                             {"Content-Type": "application/json"})
        assert status == 200
        # A chunked body (no Content-Length) is read whole and reaches the handler.
        inventory = {"resource_provider_generation": 0, "inventories": {
            "VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}}
        status, body = _request(conn, "PUT", f"/resource_providers/{rp}/inventories",
                                json.dumps(inventory).encode(),
                                {"Content-Type": "application/json"}, chunked=True)
        assert status == 200, body
        # A claim, then the same provider's usage, on the same connection.
        claim = {"allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "p",
                 "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
        status, body = _request(conn, "PUT", f"/allocations/{uuid.uuid4()}",
                                json.dumps(claim).encode(), {"Content-Type": "application/json"})
        assert status == 204, body
        status, body = _request(conn, "GET", f"/resource_providers/{rp}/usages")
        assert status == 200 and json.loads(body)["usages"] == {"VCPU": 2, "MEMORY_MB": 0}
        status, body = _request(conn, "GET", "/allocation_candidates?resources=VCPU:1")
        assert status == 200 and len(json.loads(body)["allocation_requests"]) == 1
        conn.close()


def test_body_size_cap_holds_for_declared_and_chunked_bodies(tmp_path):
    with server(tmp_path, "--db", f"sqlite:///{tmp_path}/p.db", "--workers", "1") as srv:
        big = b"x" * (2 * 1024 * 1024)
        for chunked in (False, True):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            status, body = _request(conn, "POST", "/resource_classes", big,
                                    {"Content-Type": "application/json"}, chunked=chunked)
            assert status == 413, (chunked, body)
            conn.close()
