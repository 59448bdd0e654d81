"""/os-keypairs: a user's public keys (create, import, list, show, delete).

Shapes of microversions 2.53-2.91: ``type`` in every body, 201 on create and 204 on
delete, ``user_id`` (admin) to act for another user, ``limit``/``marker`` on lists. A
key pair made here (no ``public_key`` given) is answered with its ``private_key`` once.
"""

from __future__ import annotations

from urllib.parse import urlencode

import webob

from stratus.api.http.schemas import KEYPAIR_CREATE
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import quotas as quota_ops
from stratus.api.store import keypairs as store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.storage import engine as db


def _user(req: Req, asked: str | None) -> str:
    """The user acted for: the caller, or (admin) whoever ``user_id`` names."""
    mine = req.ctx.user_id or ""
    if asked is None or asked == mine:
        return mine
    req.authorize("os_compute_api:os-keypairs:other_users")
    return asked


def _body(pair: store.KeyPair, *, full: bool) -> dict[str, object]:
    body: dict[str, object] = {"name": pair.name, "public_key": pair.public_key,
                               "fingerprint": pair.fingerprint, "type": pair.type}
    if full:
        body.update({"user_id": pair.user_id, "id": pair.id, "deleted": False,
                     "deleted_at": None, "updated_at": None,
                     "created_at": pair.created_at.isoformat()})
    return body


def list_keypairs(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:index")
    user = _user(req, req.query("user_id"))
    limit_text = req.query("limit")
    limit = None
    if limit_text is not None:
        if not limit_text.isdigit() or int(limit_text) > 2**31 - 1:
            raise BadRequest(f"Invalid limit {limit_text!r}: a non-negative integer.")
        limit = int(limit_text)
    try:
        with db.read(req.api.dbs.api) as conn:
            pairs = store.list_for(conn, user, limit, req.query("marker"))
    except NotFound:
        raise BadRequest(f"marker [{req.query('marker')}] not found") from None
    body: dict[str, object] = {"keypairs": [{"keypair": _body(p, full=False)} for p in pairs]}
    if limit and len(pairs) == limit:
        query = urlencode({"limit": limit, "marker": pairs[-1].name})
        body["keypairs_links"] = [{"rel": "next", "href": f"{req.webob.host_url}"
                                   f"{req.webob.script_name}/v2.1/os-keypairs?{query}"}]
    return json_response(body)


def create_keypair(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:create")
    data = req.body(KEYPAIR_CREATE)["keypair"]
    user = _user(req, data.get("user_id"))
    private = None
    public = data.get("public_key")
    key_type = data.get("type", "ssh")
    if public is None:
        if key_type != "ssh":
            raise BadRequest("Only ssh key pairs can be generated; import an x509 "
                             "certificate with public_key.")
        public, private = store.generate()
    with db.write(req.api.dbs.api) as conn:
        quota_ops.check_key_pairs(conn, req.api.quota_defaults, req.project_id, user)
        pair = store.create(conn, user, data["name"], public, key_type)
    body = _body(pair, full=False) | {"user_id": pair.user_id}
    if private is not None:
        body["private_key"] = private
    return json_response({"keypair": body}, 201)


def show_keypair(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:show")
    user = _user(req, req.query("user_id"))
    with db.read(req.api.dbs.api) as conn:
        pair = store.get(conn, user, req.arg("name"))
    return json_response({"keypair": _body(pair, full=True)})


def delete_keypair(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-keypairs:delete")
    user = _user(req, req.query("user_id"))
    with db.write(req.api.dbs.api) as conn:
        store.delete(conn, user, req.arg("name"))
    return empty_response(204)
