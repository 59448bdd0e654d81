"""The image and network services as far as Nova asks them when booting with
``"networks": "none"``: one active image, and empty answers for the network service."""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

IMAGE_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "stratus-bench-image"))
IMAGE = {
    "id": IMAGE_ID, "name": "bench-image", "status": "active", "visibility": "public",
    "container_format": "bare", "disk_format": "raw", "size": 1024, "min_disk": 0,
    "min_ram": 0, "protected": False, "owner": "bench", "tags": [],
    "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
    "checksum": "0" * 32, "os_hash_algo": "sha512", "os_hash_value": "0" * 128,
    "self": f"/v2/images/{IMAGE_ID}", "file": f"/v2/images/{IMAGE_ID}/file",
    "schema": "/v2/schemas/image",
}
SCHEMA = {"name": "image", "properties": {k: {"type": ["null", "string", "integer",
          "boolean", "array", "object"]} for k in IMAGE}, "additionalProperties": {
          "type": "string"}}
NETWORK_LISTS = ("ports", "networks", "subnets", "extensions", "security_groups",
                 "floatingips", "routers")


def answer(path: str) -> Any:
    path = path.split("?", 1)[0].rstrip("/")
    if path.startswith("/v2/images/"):
        return IMAGE if path.rsplit("/", 1)[-1] == IMAGE_ID else None
    if path == "/v2/images":
        return {"images": [IMAGE]}
    if path.startswith("/v2/schemas/"):
        return SCHEMA
    name = path.rsplit("/", 1)[-1]
    if name in NETWORK_LISTS:
        return {name: []}
    return {}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = answer(self.path)
        data = json.dumps(body if body is not None else {"message": "not found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _reply

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
