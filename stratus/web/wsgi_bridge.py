"""A WSGI application served by an ASGI server (uvicorn), with one thread hop per request.

a2wsgi, which this replaces for Placement, runs the WSGI call in a thread and
hands every piece of the response back to the event loop separately, waiting
for each (``run_coroutine_threadsafe(...).result()``): the status line, then
each body chunk, then the end. Each hand-off wakes the loop and trades the GIL,
which cost about 0.6 ms per request (of 0.86 ms in all for a trivial app, here),
and one hand-off per chunk of a large candidates answer.

Here the loop reads the whole request body first, one worker thread runs the
WSGI call to completion (collecting the status, headers and body), and the loop
sends the response: one hop there and one back. Bodies are read only up to
``max_body_bytes`` (plus one byte): a larger body, even a chunked one without a
Content-Length, reaches the application with a Content-Length above its limit
and no more bytes, so the application answers 413 as it does for a declared one.
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import logging
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
LOG = logging.getLogger(__name__)

# Body pieces are joined up to this size before they go to the loop: one send per
# piece, rather than one per chunk the application yields.
SEND_PIECE_BYTES = 256 * 1024


class WSGIBridge:
    """ASGI callable wrapping ``app``; WSGI calls run on ``threads`` worker threads."""

    def __init__(self, app: WSGIApp, threads: int = 16,
                 max_body_bytes: int | None = None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wsgi")

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    self.executor.shutdown(wait=False)
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _http(self, scope: dict[str, Any], receive: Callable[..., Any],
                    send: Callable[..., Any]) -> None:
        body, over_limit = await self._read_body(receive)
        if body is None:
            # The client went away before sending its whole body: nobody to answer, and
            # an application handed half a body would only log a "failure" of its own.
            LOG.info("%s %s not served: the client disconnected while sending the body",
                     scope.get("method"), scope.get("path"))
            return
        environ = build_environ(scope, body, over_limit)
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        status, headers, pieces = await loop.run_in_executor(
            self.executor, context.run, self._run, environ)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        last = len(pieces) - 1
        for i, piece in enumerate(pieces):
            await send({"type": "http.response.body", "body": piece, "more_body": i < last})
        if not pieces:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _read_body(self, receive: Callable[..., Any]
                         ) -> tuple[bytes | None, int | None]:
        """The body (None: the client disconnected before its end), and the size to
        report instead when it went over the limit."""
        chunks: list[bytes] = []
        size = 0
        limit = self.max_body_bytes
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, None
            chunk = message.get("body", b"")
            if chunk:
                chunks.append(chunk)
                size += len(chunk)
            if limit is not None and size > limit:
                return b"", size
            if not message.get("more_body", False):
                break
        return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), None

    def _run(self, environ: dict[str, Any]
             ) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        """The whole WSGI call, on a worker thread: status, headers, body pieces."""
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], None]:
            # Nothing is sent before the call returns, so a later call (with exc_info,
            # from an error handler) simply replaces the earlier status and headers.
            started[:] = [status, headers]
            return written.append

        iterable = self.app(environ, start_response)
        try:
            chunks = [*written, *iterable] if written else list(iterable)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()
        status, headers = started
        encoded = [(name.lower().encode("latin-1"), value.encode("latin-1"))
                   for name, value in headers]
        return int(status[:3]), encoded, _pieces(chunks)


def _pieces(chunks: list[bytes]) -> list[bytes]:
    """``chunks`` joined into pieces of about SEND_PIECE_BYTES (empty chunks dropped)."""
    if len(chunks) <= 1:
        return [c for c in chunks if c]
    pieces: list[bytes] = []
    group: list[bytes] = []
    size = 0
    for chunk in chunks:
        if not chunk:
            continue
        group.append(chunk)
        size += len(chunk)
        if size >= SEND_PIECE_BYTES:
            pieces.append(b"".join(group))
            group, size = [], 0
    if group:
        pieces.append(b"".join(group) if len(group) > 1 else group[0])
    return pieces


def build_environ(scope: dict[str, Any], body: bytes, over_limit: int | None) -> dict[str, Any]:
    """The WSGI environ for an ASGI HTTP scope (PEP 3333 strings: latin-1 decoded bytes)."""
    script_name = scope.get("root_path", "").encode("utf-8").decode("latin-1")
    path_info = scope["path"].encode("utf-8").decode("latin-1")
    if script_name and path_info.startswith(script_name):
        path_info = path_info[len(script_name):]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info,
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1] or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    client = scope.get("client")
    if client:
        environ["REMOTE_ADDR"] = client[0]
        environ["REMOTE_PORT"] = str(client[1])
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1")
        if name == "content-length":
            key = "CONTENT_LENGTH"
        elif name == "content-type":
            key = "CONTENT_TYPE"
        else:
            key = "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        if key in environ:
            value = environ[key] + "," + value
        environ[key] = value
    if over_limit is not None:
        # Report at least what arrived, so the application's size check refuses it.
        declared = environ.get("CONTENT_LENGTH", "")
        environ["CONTENT_LENGTH"] = str(max(over_limit, int(declared) if declared.isdigit()
                                            else 0))
    elif "HTTP_TRANSFER_ENCODING" in environ:
        # The body is already de-chunked and whole: say how long it is.
        environ["CONTENT_LENGTH"] = str(len(body))
        del environ["HTTP_TRANSFER_ENCODING"]
    return environ
