"""Image data over a real HTTP server, as ``stratus serve`` serves the image API: 50 MB
uploaded chunked (how glanceclient, openstacksdk and Tempest stream) and with a
Content-Length, read back byte for byte with the same checksums, on every database; a
client that goes away mid-upload stores nothing; an upload is never held in memory."""

from __future__ import annotations

import hashlib
import random
import socket
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.allinone.http import ThreadedServer
from stratus.image import service
from stratus.storage import engine as db

pytestmark = pytest.mark.all_backends
SIZE = 50 * 1024 * 1024
PIECE = 256 * 1024
OCTETS = {"Content-Type": "application/octet-stream", "X-Auth-Token": "admin"}


class Data:
    """Deterministic pseudo-random bytes, made piece by piece (never all at once), with
    the checksums an image of them must show."""

    def __init__(self, seed: int, size: int = SIZE) -> None:
        self.seed, self.size = seed, size
        md5, sha512 = hashlib.md5(usedforsecurity=False), hashlib.sha512()
        for piece in self.pieces():
            md5.update(piece)
            sha512.update(piece)
        self.md5, self.sha512 = md5.hexdigest(), sha512.hexdigest()

    def pieces(self) -> Iterator[bytes]:
        rng = random.Random(self.seed)
        left = self.size
        while left:
            n = min(PIECE, left)
            left -= n
            yield rng.randbytes(n)


@pytest.fixture
def image_server(tmp_path, empty_database_url):
    config = configuration.load(files=[], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path), ("image", "max_image_size"): 64 * 1024 * 1024})
    engine = db.create_engine(empty_database_url)
    deps = service.make_deps(config, engine)
    server = ThreadedServer("image-api", service.make_app(config, deps), "127.0.0.1", 0,
                            streams_bodies=True)
    server.start()
    client = httpx.Client(base_url=server.url, timeout=120)
    yield client, deps, server
    client.close()
    server.stop()
    engine.dispose()


def _new_image(client: httpx.Client, name: str) -> str:
    resp = client.post("/v2/images", headers={"X-Auth-Token": "admin"},
                       json={"name": name, "disk_format": "raw", "container_format": "bare"})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def _read_back(client: httpx.Client, image_id: str) -> tuple[int, str, str, dict[str, Any]]:
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    with client.stream("GET", f"/v2/images/{image_id}/file",
                       headers={"X-Auth-Token": "admin"}) as resp:
        assert resp.status_code == 200
        headers = dict(resp.headers)
        for piece in resp.iter_bytes():
            size += len(piece)
            md5.update(piece)
            sha512.update(piece)
    return size, md5.hexdigest(), sha512.hexdigest(), headers


def test_50_mb_chunked_and_by_length_read_back_the_same(image_server):
    client, deps, _ = image_server
    for how, seed in (("chunked", 1), ("length", 2)):
        data = Data(seed)
        image_id = _new_image(client, how)
        headers = dict(OCTETS)
        if how == "length":
            headers["Content-Length"] = str(data.size)
        request = client.build_request("PUT", f"/v2/images/{image_id}/file",
                                       headers=headers, content=data.pieces())
        assert ("chunked" in request.headers.get("Transfer-Encoding", "")) == \
            (how == "chunked")
        resp = client.send(request)
        assert resp.status_code == 204, resp.text
        shown = client.get(f"/v2/images/{image_id}", headers={"X-Auth-Token": "admin"}).json()
        assert shown["status"] == "active"
        assert (shown["size"], shown["checksum"], shown["os_hash_algo"],
                shown["os_hash_value"]) == (data.size, data.md5, "sha512", data.sha512)
        size, md5, sha512, got = _read_back(client, image_id)
        assert (size, md5, sha512) == (data.size, data.md5, data.sha512)
        assert got["content-md5"] == data.md5
        assert deps.data_path(image_id).stat().st_size == data.size


def test_an_upload_is_streamed_not_held(image_server):
    """The server's Python allocations during a 50 MB upload stay a small fraction of
    it (the pieces in flight), so images larger than memory can be uploaded."""
    client, _, _ = image_server
    data = Data(3)
    image_id = _new_image(client, "streamed")
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        resp = client.put(f"/v2/images/{image_id}/file", headers=OCTETS,
                          content=data.pieces())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert resp.status_code == 204, resp.text
    assert peak - base < 8 * 1024 * 1024, f"peak {peak - base} bytes above the baseline"


def _wait_for_status(client: httpx.Client, image_id: str, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        shown = dict(client.get(f"/v2/images/{image_id}",
                                headers={"X-Auth-Token": "admin"}).json())
        if done(shown["status"]) or time.monotonic() > deadline:
            return shown
        time.sleep(0.05)


def test_a_client_gone_mid_upload_leaves_the_image_queued_and_nothing_stored(image_server):
    client, deps, server = image_server
    for chunked in (True, False):
        image_id = _new_image(client, "cut")
        head = (f"PUT /v2/images/{image_id}/file HTTP/1.1\r\nHost: x\r\n"
                "X-Auth-Token: admin\r\nContent-Type: application/octet-stream\r\n")
        head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else \
            "Content-Length: 1000000\r\n\r\n"
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(head.encode())
            piece = b"x" * 4096
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            _wait_for_status(client, image_id, lambda status: status == "saving")
        # The server notices the closed connection in its own time: wait for the upload
        # to end (the status leaves "saving"), then check how it ended.
        shown = _wait_for_status(client, image_id, lambda status: status != "saving")
        assert shown["status"] == "queued", shown
        assert shown["size"] is None and shown["checksum"] is None
        assert not deps.data_path(image_id).exists()
        assert not list(deps.store_dir.glob("*.part"))
        retry = client.put(f"/v2/images/{image_id}/file", headers=OCTETS, content=b"again")
        assert retry.status_code == 204


def test_a_wrong_content_md5_is_refused_and_stores_nothing(image_server):
    client, deps, _ = image_server
    image_id = _new_image(client, "md5")
    resp = client.put(f"/v2/images/{image_id}/file", content=b"payload",
                      headers={**OCTETS, "Content-MD5": hashlib.md5(b"other").hexdigest()})
    assert resp.status_code == 400
    assert client.get(f"/v2/images/{image_id}",
                      headers={"X-Auth-Token": "admin"}).json()["status"] == "queued"
    assert not deps.data_path(image_id).exists()
    good = client.put(f"/v2/images/{image_id}/file", content=b"payload",
                      headers={**OCTETS, "Content-MD5": hashlib.md5(b"payload").hexdigest()})
    assert good.status_code == 204


def test_an_image_over_the_limit_chunked_is_413_and_stays_queued(image_server):
    client, deps, _ = image_server
    image_id = _new_image(client, "huge")
    resp = client.put(f"/v2/images/{image_id}/file", headers=OCTETS,
                      content=Data(4, 65 * 1024 * 1024).pieces())
    assert resp.status_code == 413
    assert client.get(f"/v2/images/{image_id}",
                      headers={"X-Auth-Token": "admin"}).json()["status"] == "queued"
    assert not deps.data_path(image_id).exists()
