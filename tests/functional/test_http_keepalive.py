"""An idle keep-alive connection outlives the OpenStack clients' 5 s polling interval.

`openstack server resize --wait` polls every 5 s on one connection; with uvicorn's default
5 s keep-alive the server closed it as the next poll was sent, and the client failed with
"Remote end closed connection without response".
"""

from __future__ import annotations

import http.client
import time

from stratus.allinone.http import ThreadedServer


def _hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


def test_a_connection_idle_for_a_polling_interval_is_still_served():
    server = ThreadedServer("hello", _hello, "127.0.0.1", 0)
    server.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/")
        first = conn.getresponse()
        assert first.read() == b"ok"
        sock = conn.sock
        time.sleep(6.0)  # longer than uvicorn's default keep-alive, as a client's poll is
        conn.request("GET", "/")
        second = conn.getresponse()
        assert second.read() == b"ok"
        assert conn.sock is sock, "the client had to open a new connection"
        conn.close()
    finally:
        server.stop()
