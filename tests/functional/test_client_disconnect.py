"""A client that disconnects in the middle of its request body is not an error of the
service: no ERROR, no traceback, and the next request is served. Over real sockets, for
the network, identity and image APIs (and Placement), as ``stratus serve`` serves them
(uvicorn threads: ``WSGIBridge``, a2wsgi for the image API's streamed uploads) and as
their own processes do (``WSGIBridge``)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.allinone.http import ThreadedServer
from stratus.web.wsgi_bridge import WSGIBridge
from tests.functional.cli_helpers import free_port

# A POST of each API that reads a JSON body (path, a harmless complete request after).
APIS = {
    "network": ("/v2.0/ports", "/v2.0/networks"),
    "identity": ("/v3/auth/tokens", "/v3"),
    "image": ("/v2/images", "/v2/images"),
    "placement": ("/resource_providers", "/resource_providers"),
}


def _app(name: str, config: configuration.Config) -> Any:
    if name == "network":
        from stratus.network import service
        return service.make_app(config, service.make_deps(config))
    if name == "identity":
        from stratus.identity import service as identity
        return identity.make_app(identity.make_deps(config))
    if name == "image":
        from stratus.image import service as image
        return image.make_app(config, image.make_deps(config))
    from stratus.placement import service as placement
    return placement.make_app(config, sync=True)


@contextmanager
def _bridged(app: Any) -> Iterator[str]:
    """``app`` as the service commands serve it: uvicorn and WSGIBridge."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(WSGIBridge(app), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def _threaded(app: Any) -> Iterator[str]:
    """``app`` as ``stratus serve`` serves it."""
    server = ThreadedServer("test", app, "127.0.0.1", 0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _send_half_a_body(url: str, path: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n"
                     "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                     '{"half": '.encode())


@pytest.mark.parametrize("transport", ["serve", "bridge"])
@pytest.mark.parametrize("name", sorted(APIS))
def test_a_client_gone_mid_body_is_no_error(tmp_path, caplog, name, transport):
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    serving = _threaded if transport == "serve" else _bridged
    post, get = APIS[name]
    caplog.set_level(logging.INFO)
    with serving(_app(name, config)) as url:
        for _ in range(3):
            _send_half_a_body(url, post)
        # Still serving: the next request is answered (a gone client leaves no damage).
        deadline = time.monotonic() + 10
        resp = httpx.get(url + get, headers={"X-Auth-Token": "admin"}, timeout=30)
        while not any("not served" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
            time.sleep(0.05)
    assert resp.status_code < 500, resp.text
    bad = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert bad == [], [(r.name, r.getMessage()) for r in bad]
    gone = [r.getMessage() for r in caplog.records if "not served" in r.getMessage()]
    assert gone and all(m.startswith(f"POST {post} not served: the client disconnected")
                        for m in gone), gone
