"""Malformed HTTP against a real server (uvicorn with httptools, as deployed): each gets
an answer below 500 or a closed connection, and the server keeps serving."""

from __future__ import annotations

import socket

import httpx

# ---- over HTTP: malformed requests do not cost the connection or the server --------------


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks):
                    break
        except TimeoutError:
            pass
        return b"".join(chunks)


def test_malformed_http_gets_an_answer_and_the_server_keeps_serving(live_server) -> None:
    port = live_server.port
    for garbage in (b"GARBAGE\r\n\r\n", b"GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: x\r\nX-Bad: \x00\x01\r\n\r\n",
                    b"GET / HTTP/1.1\r\n" + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n",
                    b"POST /resource_providers HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Length: 5\r\n\r\n{"):
        answer = _raw(port, garbage)
        assert not answer.startswith(b"HTTP/1.1 5"), (garbage[:40], answer[:200])
    with httpx.Client(base_url=live_server.url, timeout=10) as http:
        for _ in range(20):   # one keep-alive connection, many requests
            resp = http.get("/resource_providers?name=%ff",
                            headers={"X-Auth-Token": "admin"})
            assert resp.status_code == 400
        assert http.get("/").status_code == 200
