"""PLACEHOLDER: being implemented."""

from __future__ import annotations

import webob

from stratus.placement.http.errors import HTTPError
from stratus.placement.http.wsgi import Req


def get_inventories(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def create_inventory(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def set_inventories(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def delete_inventories(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def get_inventory(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def update_inventory(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def delete_inventory(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")

