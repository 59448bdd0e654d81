"""PLACEHOLDER: being implemented."""

from __future__ import annotations

import webob

from stratus.placement.http.errors import HTTPError
from stratus.placement.http.wsgi import Req


def list_traits(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def get_trait(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def put_trait(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def delete_trait(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def list_traits_for_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def update_traits_for_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def delete_traits_for_resource_provider(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")

