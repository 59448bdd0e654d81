"""Faults in the Compute API's format, produced in this one place.

``{"<name>": {"code": <status>, "message": "..."}}`` where the name is Nova's
for the status: badRequest, unauthorized, forbidden, itemNotFound, badMethod,
conflictingRequest, overLimit, badMediaType, notImplemented, serviceUnavailable,
and computeFault for anything else (500 included).
"""

from __future__ import annotations

import json

import webob

from stratus.api.store.errors import ComputeAPIError

FAULT_NAMES = {
    400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
    405: "badMethod", 409: "conflictingRequest", 413: "overLimit", 415: "badMediaType",
    429: "overLimit", 501: "notImplemented", 503: "serviceUnavailable",
}


class HTTPError(ComputeAPIError):
    """An HTTP-level refusal (auth, routing, content type, version) with its status."""

    def __init__(self, status: int, message: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


def fault_response(status: int, message: str,
                   headers: dict[str, str] | None = None) -> webob.Response:
    name = FAULT_NAMES.get(status, "computeFault")
    resp = webob.Response(status=status, charset=None, content_type="application/json",
                          body=json.dumps({name: {"code": status,
                                                  "message": message}}).encode())
    for key, value in (headers or {}).items():
        resp.headers[key] = value
    return resp
