"""stratus.web.wsgi_bridge: a WSGI app behind an ASGI server, driven with ASGI messages."""

from __future__ import annotations

import asyncio
from typing import Any

from stratus.web import wsgi_bridge
from stratus.web.wsgi_bridge import WSGIBridge


def _scope(method: str = "GET", path: str = "/x", query: bytes = b"",
           headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "query_string": query,
            "root_path": "", "http_version": "1.1", "scheme": "http",
            "server": ("127.0.0.1", 8778), "client": ("127.0.0.1", 5555),
            "headers": headers or []}


def _call(bridge: WSGIBridge, scope: dict[str, Any], body_parts: list[bytes] | None = None
          ) -> list[dict[str, Any]]:
    parts = list(body_parts or [b""])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        chunk = parts.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(parts)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(bridge(scope, receive, send))
    return sent


def _echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Answers with what it saw: method, path, query, length and body."""
    body = environ["wsgi.input"].read()
    seen = (f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}?{environ['QUERY_STRING']} "
            f"len={environ.get('CONTENT_LENGTH')} type={environ.get('CONTENT_TYPE')} "
            f"token={environ.get('HTTP_X_AUTH_TOKEN')} body=").encode() + body
    start_response("201 Created", [("Content-Type", "text/plain"),
                                   ("Content-Length", str(len(seen)))])
    return [seen]


def test_request_reaches_the_app_and_the_answer_comes_back():
    scope = _scope("PUT", "/allocations/abc", b"a=1", [
        (b"content-type", b"application/json"), (b"content-length", b"7"),
        (b"x-auth-token", b"admin")])
    sent = _call(WSGIBridge(_echo, threads=2), scope, [b'{"a":', b"1}"])
    assert sent[0]["type"] == "http.response.start"
    assert sent[0]["status"] == 201
    assert (b"content-type", b"text/plain") in sent[0]["headers"]
    assert sent[-1]["more_body"] is False
    body = b"".join(m["body"] for m in sent[1:])
    assert body == (b"PUT /allocations/abc?a=1 len=7 type=application/json token=admin "
                    b'body={"a":1}')


def test_a_chunked_body_is_given_its_length():
    scope = _scope("POST", "/x", headers=[(b"transfer-encoding", b"chunked")])
    sent = _call(WSGIBridge(_echo, threads=1), scope, [b"ab", b"cd", b""])
    assert b"len=4" in sent[1]["body"] and sent[1]["body"].endswith(b"body=abcd")


def test_a_body_over_the_limit_is_not_read_further_and_says_so():
    # No Content-Length (chunked): the app sees a length above the limit and no bytes.
    scope = _scope("POST", "/x", headers=[(b"transfer-encoding", b"chunked")])
    sent = _call(WSGIBridge(_echo, threads=1, max_body_bytes=5), scope,
                 [b"abcd", b"efgh", b"never read"])
    assert b"len=8 " in sent[1]["body"] and sent[1]["body"].endswith(b"body=")


def test_many_chunks_are_sent_as_few_pieces(monkeypatch):
    monkeypatch.setattr(wsgi_bridge, "SEND_PIECE_BYTES", 10)

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Length", "26")])
        return [b"abcd", b"", b"efgh", b"ijkl", b"mnop", b"qrst", b"uvwxyz"]

    sent = _call(WSGIBridge(app, threads=1), _scope())
    bodies = [m["body"] for m in sent[1:]]
    assert b"".join(bodies) == b"abcdefghijklmnopqrstuvwxyz"
    assert bodies == [b"abcdefghijkl", b"mnopqrstuvwxyz"]
    assert [m["more_body"] for m in sent[1:]] == [True, False]


def test_write_callable_and_an_empty_body():
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        write = start_response("200 OK", [])
        write(b"early ")
        return [b"late"]

    def empty(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("204 No Content", [])
        return []

    sent = _call(WSGIBridge(app, threads=1), _scope())
    assert b"".join(m["body"] for m in sent[1:]) == b"early late"
    sent = _call(WSGIBridge(empty, threads=1), _scope())
    assert sent[0]["status"] == 204
    assert sent[1:] == [{"type": "http.response.body", "body": b"", "more_body": False}]


def test_an_error_handler_may_replace_the_status():
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("X-First", "1")])
        start_response("500 Internal Server Error", [("X-Second", "1")], ("exc", "info", None))
        return [b"oops"]

    sent = _call(WSGIBridge(app, threads=1), _scope())
    assert sent[0]["status"] == 500
    assert sent[0]["headers"] == [(b"x-second", b"1")]


def test_the_iterable_is_closed():
    closed: list[bool] = []

    class Body:
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield b"x"

        def close(self) -> None:
            closed.append(True)

    def app(environ: dict[str, Any], start_response: Any) -> Body:
        start_response("200 OK", [])
        return Body()

    _call(WSGIBridge(app, threads=1), _scope())
    assert closed == [True]


def test_lifespan_is_answered():
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(WSGIBridge(_echo, threads=1)({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete",
                                         "lifespan.shutdown.complete"]
