"""Error responses in Placement's format, produced in this one place.

``{"errors": [{"status", "title", "detail", "request_id", "code"?}]}``; the
``code`` key appears from microversion 1.23. A 406 raised before the version
was known also carries ``min_version`` and ``max_version``.
"""

from __future__ import annotations

import html
import json
from http import HTTPStatus
from typing import Any

import webob

from stratus.placement import errors
from stratus.placement.http import microversion
from stratus.placement.http.accept import acceptable


class HTTPError(errors.PlacementError):
    """An HTTP-level refusal (auth, content type, routing) with an explicit status."""

    def __init__(
        self,
        status: int,
        detail: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail, code)
        self.status = status
        self.headers = headers or {}


def _error_media_type(environ: dict[str, Any]) -> str:
    """JSON unless the client's Accept rules it out (webob's choice, as Placement makes it):
    an Accept that takes HTML but not JSON gets HTML, one that takes neither plain text."""
    accept = environ.get("HTTP_ACCEPT")
    if not accept:
        return "application/json"
    offers = acceptable(accept, ("application/json", "text/html"))
    return offers[0] if offers else "text/plain"


def error_response(
    exc: errors.PlacementError,
    environ: dict[str, Any],
    want: microversion.Version | None,
) -> webob.Response:
    status = exc.status
    body: dict[str, Any] = {
        "status": status,
        "title": HTTPStatus(status).phrase,
        "detail": exc.detail,
    }
    if want is not None and want.supports("error_codes"):
        body["code"] = exc.code
    request_id = environ.get("openstack.request_id")
    if request_id:
        body["request_id"] = request_id
    if status == 406 and want is None:
        body["max_version"] = microversion.MAX_VERSION
        body["min_version"] = microversion.MIN_VERSION
    kind = _error_media_type(environ)
    if kind == "application/json":
        payload = json.dumps({"errors": [body]}).encode()
    elif kind == "text/html":
        title = f"{status} {body['title']}"
        payload = (f"<html>\n <head>\n  <title>{title}</title>\n </head>\n <body>\n"
                   f"  <h1>{title}</h1>\n  {html.escape(exc.detail)}\n </body>\n</html>"
                   ).encode()
    else:
        payload = f"{status} {body['title']}\n\n{exc.detail}\n".encode()
    resp = webob.Response(status=status, body=payload, content_type=kind, charset=None)
    for name, value in getattr(exc, "headers", {}).items():
        resp.headers[name] = value
    return resp
