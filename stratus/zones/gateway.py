"""A gateway from HTTP to a zone tree's in-process bus (``stratus serve --zones``), so
``stratus zone ...`` in another process can ask its zone managers.

``POST /zone/<server>`` with a signed envelope as the body: the envelope is handed to
the bus as it is and the reply envelope is the answer (504 when none comes in time).
The gateway listens on 127.0.0.1 only and reads nothing of what it carries: every
message is verified by the zone manager that receives it, every reply by the CLI, as
over RabbitMQ. Where it listens is written to ``zones/bus.json`` in the data directory,
which the CLI reads when no bus is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from stratus.bus.transport import Target, Transport
from stratus.config import Config

MAX_BODY = 4 * 1024 * 1024
MAX_WAIT = 120.0


def bus_file(config: Config) -> Path:
    return Path(config.data_dir, "zones", "bus.json")


def write_bus_file(config: Config, url: str, top: str) -> None:
    path = bus_file(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"transport_url": url, "top": top}))
    tmp.replace(path)


def read_bus_file(config: Config) -> dict[str, str] | None:
    """What a running ``serve --zones`` wrote (None: nothing, or not readable)."""
    try:
        data = json.loads(bus_file(config).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("transport_url"), str):
        return None
    return {"transport_url": data["transport_url"], "top": str(data.get("top") or "")}


class Gateway:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        parts = [unquote(p) for p in environ.get("PATH_INFO", "").strip("/").split("/")]
        if environ.get("REQUEST_METHOD") != "POST" or len(parts) != 2 or parts[0] != "zone":
            return _answer(start_response, "404 Not Found", b"POST /zone/<zone> only")
        try:
            size = int(environ.get("CONTENT_LENGTH") or 0)
            wait = min(float(environ.get("HTTP_X_TIMEOUT") or 10.0), MAX_WAIT)
            target = Target("zone", parts[1])
        except ValueError as exc:
            return _answer(start_response, "400 Bad Request", str(exc).encode())
        if size <= 0 or size > MAX_BODY:
            return _answer(start_response, "413 Payload Too Large", b"body size")
        payload = environ["wsgi.input"].read(size)
        try:
            reply = self.transport.request(target, payload, max(wait, 0.1))
        except TimeoutError:
            return _answer(start_response, "504 Gateway Timeout", b"no answer in time")
        except Exception as exc:   # the bus refused it: say so, as a transport would
            return _answer(start_response, "502 Bad Gateway", str(exc).encode()[:500])
        return _answer(start_response, "200 OK", reply)


def _answer(start_response: Callable[..., Any], status: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", "application/octet-stream"),
                            ("Content-Length", str(len(body)))])
    return [body]
