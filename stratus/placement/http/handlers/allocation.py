"""PLACEHOLDER: being implemented."""

from __future__ import annotations

import webob

from stratus.placement.http.errors import HTTPError
from stratus.placement.http.wsgi import Req


def list_for_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def set_allocations(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def list_for_consumer(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def set_allocations_for_consumer(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def delete_allocations(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")

