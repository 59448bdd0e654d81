"""``/v3/policies``: Keystone's policy blobs, written and read by admins (Keystone's
defaults: a system reader reads, a system admin writes). The blob is any string, the
type at most 255 characters; other attributes are kept as given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import webob

from stratus.identity import policies
from stratus.identity.http.common import (
    Req,
    extra_of,
    links,
    no_content,
    not_found,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.identity.store import new_id
from stratus.storage import engine as db

_KNOWN = {"type", "blob"}


def _render(req: Req, p: policies.Policy) -> dict[str, Any]:
    return {**p.extra, "id": p.id, "type": p.type, "blob": p.blob,
            "links": {"self": f"{req.url}/policies/{p.id}"}}


def _blob(body: Mapping[str, Any]) -> str:
    value = body.get("blob")
    if not isinstance(value, str):
        raise IdentityError(400, "Invalid input for field 'blob': a string is expected.")
    return value


def _get(conn: Any, policy_id: str) -> policies.Policy:
    found = policies.get(conn, policy_id)
    if found is None:
        raise not_found("policy", policy_id)
    return found


def create(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("policy")
    if "blob" not in body:
        raise IdentityError(400, "'blob' is a required property.")
    made = policies.Policy(new_id(), text(body, "type", required=True) or "", _blob(body),
                           extra_of(body, _KNOWN))
    with db.write(req.deps.engine) as conn:
        policies.create(conn, made)
    return respond({"policy": _render(req, made)}, 201)


def listing(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        found = policies.listing(conn, type_=req.param("type"))
    return respond({"policies": [_render(req, p) for p in found],
                    "links": links(req, "policies")})


def show(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        return respond({"policy": _render(req, _get(conn, req.args["id"]))})


def update(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("policy")
    if not body:
        raise IdentityError(400, "The policy update names no attribute.")
    if body.get("id") not in (None, req.args["id"]):
        raise IdentityError(400, "The policy id cannot be changed.")
    with db.write(req.deps.engine) as conn:
        old = _get(conn, req.args["id"])
        new = policies.Policy(
            old.id, (text(body, "type", required=True) or "") if "type" in body else old.type,
            _blob(body) if "blob" in body else old.blob,
            {**old.extra, **extra_of(body, _KNOWN)})
        policies.update(conn, new)
    return respond({"policy": _render(req, new)})


def delete(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not policies.delete(conn, req.args["id"]):
            raise not_found("policy", req.args["id"])
    return no_content()
