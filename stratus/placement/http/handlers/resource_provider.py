"""PLACEHOLDER: being implemented."""

from __future__ import annotations

import webob

from stratus.placement.http.errors import HTTPError
from stratus.placement.http.wsgi import Req


def list_resource_providers(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def create_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def get_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def update_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def delete_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")

