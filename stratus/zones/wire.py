"""A compute API request as it travels down a zone tree, and its answer back up.

The top authenticates the caller and sends the request as it came (method, path,
query, the headers the compute API reads, the body) with who asked and the top's
request id; the leaf holding the server runs it through its own compute API in-process
(``stratus.zones.leaf``), so the answer is the flat API's own: status, headers, words.
Links in the answer point at the top: the leaf builds them from the base URL the top
was asked at.

::

    {"method", "path", "query", "headers": {name: value}, "body": base64,
     "base": "http://top:8774", "caller": {"user_id", "project_id", "roles",
     "system_scope", "request_id"}, "zone": {directives for the leaf}?}
    -> {"status": int, "headers": [[name, value], ...], "body": base64}
"""

from __future__ import annotations

import base64
import uuid as uuidlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import webob

from stratus.api.http.wsgi import Req

# What the compute API reads of a request's headers (auth is the top's, done already).
FORWARDED = ("Content-Type", "Accept", "OpenStack-API-Version", "X-OpenStack-Nova-API-Version")
# What the top answers with of the leaf's answer (it sets its own ids and lengths).
DROPPED = frozenset({"content-length", "x-openstack-request-id", "x-compute-request-id",
                     "connection", "server", "date"})


class WireError(ValueError):
    """A forwarded request or answer that is not one (the message says what is wrong)."""


def request_of(req: Req, path: str | None = None, query: str | None = None,
               method: str | None = None, body: bytes | None = None,
               zone: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The request ``req`` (or a variant of it) to send down the tree."""
    w = req.webob
    out: dict[str, Any] = {
        "method": method or w.method,
        "path": path if path is not None else w.path_info,
        "query": query if query is not None else w.query_string,
        "headers": {h: w.headers[h] for h in FORWARDED if h in w.headers},
        "body": base64.b64encode(w.body if body is None else body).decode(),
        "base": w.host_url + w.script_name,
        "caller": {"user_id": req.ctx.user_id, "project_id": req.ctx.project_id,
                   "roles": list(req.ctx.roles), "system_scope": req.ctx.system_scope,
                   "request_id": req.ctx.request_id or "req-unknown"},
    }
    if zone:
        out["zone"] = dict(zone)
    return out


def check(request: Any) -> None:
    """WireError unless ``request`` is a forwarded request."""
    if not isinstance(request, dict):
        raise WireError("a forwarded request must be an object")
    for key in ("method", "path", "query", "body", "base"):
        if not isinstance(request.get(key), str):
            raise WireError(f"a forwarded request's {key} must be a string")
    if not request["path"].startswith("/"):
        raise WireError("a forwarded request's path must start with /")
    headers, caller = request.get("headers", {}), request.get("caller")
    if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise WireError("a forwarded request's headers must map names to strings")
    if not isinstance(caller, dict) or not isinstance(caller.get("request_id"), str) \
            or not isinstance(caller.get("roles"), list) or not all(
                v is None or isinstance(v, str) for k, v in caller.items()
                if k in ("user_id", "project_id", "system_scope")):
        raise WireError("a forwarded request's caller is not one")
    if request.get("zone") is not None:
        check_directives(request["zone"])
    try:
        base64.b64decode(request["body"], validate=True)
    except ValueError:
        raise WireError("a forwarded request's body must be base64") from None


def _strings(value: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in required) \
        and all(value.get(k) is None or isinstance(value[k], str) for k in optional)


def check_directives(zone: Any) -> None:
    """WireError unless ``zone`` holds only directives a leaf knows, each as the top
    sends it: ``build`` (the server's uuid and host), ``keypair`` and ``group`` (what
    the leaf must hold for the build), ``networks`` (network id -> physical network),
    ``list`` (paging of a merged list)."""
    if not isinstance(zone, dict):
        raise WireError("a forwarded request's zone directives must be an object")
    unknown = sorted(set(zone) - {"build", "keypair", "group", "networks", "list"})
    if unknown:
        raise WireError(f"unknown zone directives: {', '.join(map(str, unknown))}")
    build = zone.get("build")
    if build is not None:
        if not _strings(build, ("uuid", "host")) or not build["host"]:
            raise WireError("a build directive needs the server's uuid and host")
        try:
            uuidlib.UUID(build["uuid"])
        except ValueError:
            raise WireError(f"a build directive's uuid {build['uuid']!r} is not a "
                            "UUID") from None
    keypair = zone.get("keypair")
    if keypair is not None and not _strings(keypair, ("user_id", "name", "public_key",
                                                      "type")):
        raise WireError("a keypair directive needs user_id, name, public_key and type")
    group = zone.get("group")
    if group is not None and not (
            _strings(group, ("uuid", "name", "policy", "project_id"), ("user_id",))
            and (group.get("max_per_host") is None
                 or type(group["max_per_host"]) is int)):
        raise WireError("a group directive needs uuid, name, policy and project_id")
    networks = zone.get("networks")
    if networks is not None and not (isinstance(networks, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in networks.items())):
        raise WireError("a networks directive maps network ids to physical networks")
    if zone.get("list") is not None and not isinstance(zone["list"], dict):
        raise WireError("a list directive must be an object")


def environ(request: Mapping[str, Any]) -> dict[str, Any]:
    """The WSGI environ of a forwarded request (checked by :func:`check`)."""
    path = request["path"] + (f"?{request['query']}" if request["query"] else "")
    made = webob.Request.blank(path, base_url=request["base"], method=request["method"],
                               headers=dict(request.get("headers") or {}))
    made.body = base64.b64decode(request["body"])
    return dict(made.environ)


def run(app: Callable[..., Iterable[bytes]], env: dict[str, Any]) -> dict[str, Any]:
    """Call ``app`` with ``env``; its answer as the wire carries it."""
    resp = webob.Request(env).get_response(app)
    return {"status": resp.status_code,
            "headers": [[k, v] for k, v in resp.headerlist if k.lower() not in DROPPED],
            "body": base64.b64encode(resp.body).decode()}


def answer_of(data: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """A leaf's answer read back; WireError if it is not one (a zone answering
    nonsense)."""
    if not isinstance(data, dict) or type(data.get("status")) is not int \
            or not 100 <= data["status"] <= 599:
        raise WireError("the answer has no HTTP status")
    headers = data.get("headers")
    if not isinstance(headers, list) or not all(
            isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h)
            for h in headers):
        raise WireError("the answer's headers are not [name, value] pairs")
    try:
        body = base64.b64decode(str(data.get("body", "")), validate=True)
    except ValueError:
        raise WireError("the answer's body is not base64") from None
    return data["status"], [(k, v) for k, v in headers], body


def response(data: Any) -> webob.Response:
    """A leaf's answer as the top's response."""
    status, headers, body = answer_of(data)
    resp = webob.Response(status=status, body=body, content_type=None)
    resp.content_type = None
    for name, value in headers:
        resp.headers.add(name, value)
    resp.content_length = len(body)
    return resp
