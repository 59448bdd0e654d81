"""PLACEHOLDER: being implemented."""

from __future__ import annotations

import webob

from stratus.placement.http.errors import HTTPError
from stratus.placement.http.wsgi import Req


def list_usages(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")


def get_total_usages(req: Req) -> webob.Response:
    raise HTTPError(501, "not implemented yet")

