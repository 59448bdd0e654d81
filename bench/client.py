"""The benchmark's HTTP client: the standard library's, kept lean, the same for both servers.

httpx, which the first versions of the benches used, spent about 0.6 ms of CPU
per request on this machine (http.client about 0.2 ms): with both servers
answering small requests in a few milliseconds, and the client sharing the two
cores with the server, that cost was part of every figure. Requests here are
sent with TCP_NODELAY and their body in one write; the connection is reopened
when a server closes it (the reference's gunicorn sync workers close after each
response).
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

VERSION = "1.39"
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {VERSION}",
           "Accept": "application/json"}


class _NoDelayConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Client:
    """One keep-alive connection to ``base_url`` (``http://host:port``)."""

    def __init__(self, base_url: str, timeout: float = 1800) -> None:
        hostport = base_url.split("://", 1)[-1].rstrip("/")
        host, _, port = hostport.partition(":")
        self._conn = _NoDelayConnection(host, int(port or 80), timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """Status and body of one exchange (the body read in full)."""
        headers = dict(HEADERS)
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            self._conn.request(method, path, body=body, headers=headers)
            resp = self._conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # A kept-alive connection the server closed while idle: once more on a new one.
            self._conn.close()
            self._conn.request(method, path, body=body, headers=headers)
            resp = self._conn.getresponse()
        return resp.status, resp.read()

    def get(self, path: str) -> tuple[int, bytes]:
        return self.request("GET", path)

    def put_json(self, path: str, data: Any) -> tuple[int, bytes]:
        return self.request("PUT", path, json.dumps(data).encode())

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
