"""GET /, /v2/ and /v2.1/: version discovery, without a token (as in Nova).

``GET /`` lists the legacy v2.0 API first (Tempest checks this order) and v2.1 with
the microversion range; each version's ``self`` link answers its own document.
"""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http import microversion
from stratus.api.http.wsgi import Req, json_response

_DOCS = "http://docs.openstack.org/"
VERSIONS: dict[str, dict[str, Any]] = {
    "v2.0": {"id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "",
             "updated": "2025-07-04T12:00:00Z", "path": "v2",
             "media": "application/vnd.openstack.compute+json;version=2"},
    "v2.1": {"id": "v2.1", "status": "CURRENT", "version": microversion.MAX_VERSION,
             "min_version": microversion.MIN_VERSION, "updated": "2013-07-23T11:33:21Z",
             "path": "v2.1", "media": "application/vnd.openstack.compute+json;version=2.1"},
}


def _base(req: Req) -> str:
    return req.webob.host_url + req.webob.script_name


def _summary(req: Req, v: dict[str, Any]) -> dict[str, Any]:
    return {"id": v["id"], "status": v["status"], "version": v["version"],
            "min_version": v["min_version"], "updated": v["updated"],
            "links": [{"rel": "self", "href": f"{_base(req)}/{v['path']}/"}]}


def versions(req: Req) -> webob.Response:
    return json_response({"versions": [_summary(req, VERSIONS[k]) for k in sorted(VERSIONS)]})


def _document(req: Req, v: dict[str, Any]) -> webob.Response:
    body = _summary(req, v)
    body["links"].append({"rel": "describedby", "type": "text/html", "href": _DOCS})
    body["media-types"] = [{"base": "application/json", "type": v["media"]}]
    return json_response({"version": body})


def version(req: Req) -> webob.Response:
    return _document(req, VERSIONS["v2.1"])


def legacy_version(req: Req) -> webob.Response:
    return _document(req, VERSIONS["v2.0"])
