"""GET /: version discovery, the one request that needs no token."""

from __future__ import annotations

import webob

from stratus.placement.http import microversion
from stratus.placement.http.wsgi import Req, json_response


def home(req: Req) -> webob.Response:
    version = {
        "id": "v1.0",
        "max_version": microversion.MAX_VERSION,
        "min_version": microversion.MIN_VERSION,
        # Placement's value; clients only check that it is present.
        "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}],
    }
    return json_response(req, {"versions": [version]})
