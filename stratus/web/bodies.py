"""Reading a request body in pieces, whatever its transfer encoding, without holding it.

A body comes either with a ``Content-Length`` (read exactly that many bytes; fewer means
the client went away) or ``Transfer-Encoding: chunked`` (the server has already taken the
chunking off: read until the input ends). webob's ``body_file`` knows only the first
kind: for a chunked request it is empty, which once stored images of 0 bytes.

A server that turns ASGI into WSGI (a2wsgi) cannot tell a body that ended from a client
that went away in the middle of a chunked one: both look like the end of the input.
:func:`guard_disconnects` wraps the ASGI app so that a disconnect before the last
piece raises :class:`ClientGone` in the reader instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

CHUNK_BYTES = 65_536


class BodyError(Exception):
    """A body that cannot be taken; ``status`` is the HTTP answer it deserves."""

    status = 400


class BodyTooLarge(BodyError):
    status = 413

    def __init__(self, limit: int, size: int | None = None) -> None:
        said = f"{size} bytes" if size is not None else f"more than {limit} bytes"
        super().__init__(f"The request body is {said}; the limit is {limit}.")
        self.limit, self.size = limit, size


class BodyIncomplete(BodyError):
    """Fewer bytes arrived than the request declared, or the client went away."""


class ClientGone(BodyIncomplete, OSError):
    def __init__(self) -> None:
        super().__init__("The client went away before the request body ended.")


def declared_length(environ: dict[str, Any]) -> int | None:
    """The Content-Length, or None when there is none (or it is not a number)."""
    raw = (environ.get("CONTENT_LENGTH") or "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None


def is_chunked(environ: dict[str, Any]) -> bool:
    return "chunked" in (environ.get("HTTP_TRANSFER_ENCODING") or "").lower()


def body_pieces(environ: dict[str, Any], limit: int, chunk: int = CHUNK_BYTES
                ) -> Iterator[bytes]:
    """The request body, ``chunk`` bytes at a time. :class:`BodyTooLarge` as soon as it
    is (or says it will be) more than ``limit`` bytes; :class:`BodyIncomplete` when it
    ends before its declared length."""
    stream = environ["wsgi.input"]
    length = declared_length(environ)
    if length is not None and not is_chunked(environ):
        if length > limit:
            raise BodyTooLarge(limit, length)
        remaining = length
        while remaining:
            piece = stream.read(min(chunk, remaining))
            if not piece:
                raise BodyIncomplete(f"The request body ended after {length - remaining} "
                                     f"of its {length} bytes.")
            remaining -= len(piece)
            yield piece
        return
    if not is_chunked(environ):
        return   # no body at all
    size = 0
    while piece := stream.read(chunk):
        size += len(piece)
        if size > limit:
            raise BodyTooLarge(limit)
        yield piece


def read_body(environ: dict[str, Any], limit: int) -> bytes:
    """The whole body (for small ones: JSON), refused above ``limit`` bytes."""
    return b"".join(body_pieces(environ, limit))


ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                    Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


def guard_disconnects(app: Any) -> ASGIApp:
    """``app`` whose ``receive`` raises :class:`ClientGone` when the client goes
    away before the request body's last piece (rather than answering "disconnect",
    which a WSGI adapter reads as the end of the body)."""

    async def guarded(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                      send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        ended = False

        async def checked() -> dict[str, Any]:
            nonlocal ended
            message = await receive()
            if message["type"] == "http.request":
                ended = ended or not message.get("more_body", False)
            elif message["type"] == "http.disconnect" and not ended:
                raise ClientGone()
            return message

        await app(scope, checked, send)

    return guarded
