"""/os-keypairs: a user's public keys (create, import, list, show, delete).

By version: 2.2 ``type`` (in bodies and on create), create 201 and delete 204 (200
and 202 before); 2.10 ``user_id`` (admin) to act for another user; 2.35
``limit``/``marker`` on lists. A key pair made here (no ``public_key`` given: an SSH
key, or for ``type: x509`` a self-signed certificate as Nova makes for WinRM) is
answered with its ``private_key`` once.
"""

from __future__ import annotations

from urllib.parse import urlencode

import webob

from stratus.api.http.schemas import KEYPAIR_CREATE, KEYPAIR_CREATE_21, KEYPAIR_CREATE_22
from stratus.api.http.views import keypairs as views
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import quotas as quota_ops
from stratus.api.store import keypairs as store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.storage import engine as db


def _user(req: Req, asked: str | None) -> str:
    """The user acted for: the caller, or (admin, from 2.10) whoever ``user_id`` names."""
    mine = req.ctx.user_id or ""
    if asked is None or asked == mine or not req.want.supports("keypair_user_id"):
        return mine
    req.authorize("os_compute_api:os-keypairs:other_users")
    return asked


def list_keypairs(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:index")
    user = _user(req, req.query("user_id"))
    limit = marker = None
    if req.want.supports("keypair_paging"):
        limit = req.query_int("limit")
        limit = req.api.max_limit if limit is None else min(limit, req.api.max_limit)
        marker = req.query("marker")
    try:
        with db.read(req.api.dbs.api) as conn:
            pairs = store.list_for(conn, user, limit, marker)
    except NotFound:
        raise BadRequest(f"marker [{marker}] not found") from None
    body: dict[str, object] = {"keypairs": [{"keypair": views.keypair(req, p)}
                                            for p in pairs]}
    if limit and req.query("limit") is not None and len(pairs) == limit:
        query = urlencode({"limit": limit, "marker": pairs[-1].name})
        body["keypairs_links"] = [{"rel": "next", "href": f"{req.webob.host_url}"
                                   f"{req.webob.script_name}/v2.1/os-keypairs?{query}"}]
    return json_response(body)


def create_keypair(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:create")
    schema = (KEYPAIR_CREATE if req.want.supports("keypair_user_id") else
              KEYPAIR_CREATE_22 if req.want.supports("keypair_type") else KEYPAIR_CREATE_21)
    data = req.body(schema)["keypair"]
    user = _user(req, data.get("user_id"))
    private = None
    public = data.get("public_key")
    key_type = data.get("type", "ssh")
    if public is None:
        public, private = store.generate_x509(user) if key_type == "x509" \
            else store.generate()
    with db.write(req.api.dbs.api) as conn:
        quota_ops.check_key_pairs(conn, req.api.quota_defaults, req.project_id, user)
        pair = store.create(conn, user, data["name"], public, key_type)
    body = views.keypair(req, pair, created=True, private_key=private)
    return json_response({"keypair": body},
                         201 if req.want.supports("keypair_type") else 200)


def show_keypair(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:show")
    user = _user(req, req.query("user_id"))
    with db.read(req.api.dbs.api) as conn:
        pair = store.get(conn, user, req.arg("name"))
    return json_response({"keypair": views.keypair(req, pair, full=True)})


def delete_keypair(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:delete")
    user = _user(req, req.query("user_id"))
    with db.write(req.api.dbs.api) as conn:
        store.delete(conn, user, req.arg("name"))
    return empty_response(204 if req.want.supports("keypair_type") else 202)
