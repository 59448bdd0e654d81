"""GET / and GET /v2.1: version discovery, without a token (as in Nova)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http import microversion
from stratus.api.http.wsgi import Req, json_response


def _version(req: Req) -> dict[str, Any]:
    base = req.webob.host_url + req.webob.script_name
    return {"id": "v2.1", "status": "CURRENT", "version": microversion.MAX_VERSION,
            "min_version": microversion.MIN_VERSION, "updated": "2013-07-23T11:33:21Z",
            "links": [{"rel": "self", "href": f"{base}/v2.1/"}]}


def versions(req: Req) -> webob.Response:
    return json_response({"versions": [_version(req)]})


def version(req: Req) -> webob.Response:
    return json_response({"version": _version(req)})
