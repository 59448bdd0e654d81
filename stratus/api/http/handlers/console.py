"""/console: the operators' read-only web page, its two static files, and its data.

The page and its files hold no data and are served to anyone (a browser cannot
send a token with a page load); the page then polls ``/console/data`` with the
operator's token in ``X-Auth-Token``, as every API client does, and that is
admin only. See docs/ops/clients.md, "The console".
"""

from __future__ import annotations

from importlib import resources

import webob

from stratus.api.console import snapshot
from stratus.api.http import render
from stratus.api.http.errors import HTTPError
from stratus.api.http.wsgi import Req, json_response

# name -> content type: the only files served (no path from the URL reaches the disk).
_FILES = {"index.html": "text/html", "console.css": "text/css",
          "console.js": "text/javascript"}
# Everything the page loads comes from this origin; nothing inline, no frames.
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
PUBLIC_PATHS = frozenset({"/console", *(f"/console/static/{name}" for name in _FILES)})


def _file(name: str) -> webob.Response:
    if name not in _FILES:
        raise HTTPError(404, "The resource could not be found.")
    body = resources.files("stratus.api.console").joinpath("static", name).read_bytes()
    resp = webob.Response(body=body, content_type=_FILES[name], charset="utf-8")
    resp.headers["Content-Security-Policy"] = _CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.cache_control = "no-cache"
    return resp


def page(req: Req) -> webob.Response:
    path = req.webob.path_info
    if path.endswith("/"):
        # The page's links are relative to /console: send /console/ there.
        resp = webob.Response(status=301)
        resp.location = req.webob.script_name + path.rstrip("/")
        return resp
    return _file("index.html")


def static(req: Req) -> webob.Response:
    return _file(req.arg("name"))


def data(req: Req) -> webob.Response:
    req.authorize("stratus:console:view")
    resp = json_response(snapshot.snapshot(req.api, render.status))
    resp.cache_control = "no-store"
    return resp
