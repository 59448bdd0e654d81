"""A client that goes away while sending its body is nobody's error.

Behind an ASGI server whose WSGI bridge streams the body (a2wsgi, as the image API's
servers use, so that uploads go to disk in pieces), a client that disconnects mid-body
leaves the application a body shorter than its ``Content-Length``; webob then raises
``DisconnectionError`` inside the handler, and each API's catch-all logged it as an
unexpected ERROR with a traceback. :func:`tolerate_disconnects` wraps ``wsgi.input`` so
that a body ending early raises :class:`ClientDisconnected`, a ``BaseException``: it
passes the APIs' ``except Exception`` catch-alls (cleanups written as ``except
BaseException``/``finally``, such as the image upload's, still run; transactions roll
back), and is answered here with a log line at INFO and an empty 400 that nobody reads.
(``WSGIBridge`` reads the whole body first and does not call the application at all when
the client has gone.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class ClientDisconnected(BaseException):
    """The client went away before sending the whole body: there is nobody to answer."""

    def __init__(self, received: int, expected: int) -> None:
        super().__init__(f"the client disconnected after {received} of {expected} bytes "
                         "of the body")
        self.received, self.expected = received, expected


class _Input:
    """``wsgi.input`` that raises :class:`ClientDisconnected` when it ends before
    ``length`` bytes (a stream's read returns fewer bytes than asked only at its end)."""

    def __init__(self, inner: Any, length: int) -> None:
        self._inner, self._length, self._seen = inner, length, 0

    def _check(self, data: bytes, asked: int | None) -> bytes:
        before = self._seen
        self._seen += len(data)
        wanted = self._length - before
        short = len(data) < wanted if asked is None or asked < 0 else \
            len(data) < min(asked, wanted)
        if short and self._seen < self._length:
            raise ClientDisconnected(self._seen, self._length)
        return data

    def read(self, size: int | None = -1) -> bytes:
        data = self._inner.read() if size is None else self._inner.read(size)
        return self._check(data, size)

    def readline(self, limit: int = -1) -> bytes:
        data = self._inner.readline(limit) if limit >= 0 else self._inner.readline()
        if not data and self._seen < self._length:
            raise ClientDisconnected(self._seen, self._length)
        self._seen += len(data)
        return bytes(data)

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(self)

    def __iter__(self) -> Iterator[bytes]:
        while self._seen < self._length:
            yield self.readline()


def tolerate_disconnects(app: WSGIApp) -> WSGIApp:
    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        raw = environ.get("CONTENT_LENGTH") or ""
        length = int(raw) if raw.isdigit() else 0
        if length > 0 and environ.get("wsgi.input") is not None:
            environ["wsgi.input"] = _Input(environ["wsgi.input"], length)
        started: list[bool] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started.append(True)
            return start_response(status, headers, exc_info)

        try:
            return app(environ, start)
        except ClientDisconnected as gone:
            LOG.info("%s %s not served: %s", environ.get("REQUEST_METHOD"),
                     environ.get("PATH_INFO"), gone)
            if not started:   # (no exc_info: some servers re-raise it at the end)
                start_response("400 Bad Request", [("Content-Length", "0")])
            return [b""]

    return wrapped
