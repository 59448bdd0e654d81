"""Error responses in Placement's format, produced in this one place.

``{"errors": [{"status", "title", "detail", "request_id", "code"?}]}``; the
``code`` key appears from microversion 1.23. A 406 raised before the version
was known also carries ``min_version`` and ``max_version``.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

import webob

from stratus.placement import errors
from stratus.placement.http import microversion


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
    resp = webob.Response(
        status=status,
        body=json.dumps({"errors": [body]}).encode(),
        content_type="application/json",
        charset=None,
    )
    for name, value in getattr(exc, "headers", {}).items():
        resp.headers[name] = value
    return resp
