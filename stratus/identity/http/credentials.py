"""``/v3/credentials`` and ``/v3/users/{id}/credentials/OS-EC2``: credentials kept for a
user (an admin's, or the user's own), blobs encrypted at rest. EC2 key pairs are
credentials of type ``ec2``; authenticating with them (``/v3/ec2tokens``) is not
served."""

from __future__ import annotations

import json
import uuid
from typing import Any

import webob

from stratus.identity import credentials as creds
from stratus.identity.http.common import (
    Req,
    conflict,
    forbidden,
    get_project,
    get_user,
    links,
    no_content,
    not_found,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.identity.model import IdentityConflict
from stratus.storage import engine as db


def _mine_or_admin(req: Req, user_id: str) -> None:
    if not req.is_admin and req.who.user.id != user_id:
        raise forbidden("a credential is its user's (or an admin's)")


def _render(req: Req, c: creds.Credential) -> dict[str, Any]:
    return {"id": c.id, "user_id": c.user_id, "project_id": c.project_id, "type": c.type,
            "blob": c.blob, "links": {"self": f"{req.url}/credentials/{c.id}"}}


def _ec2_id(blob: str) -> str:
    try:
        access = json.loads(blob).get("access")
    except (ValueError, AttributeError):
        access = None
    if not isinstance(access, str) or not access:
        raise IdentityError(400, "The blob of an ec2 credential is JSON with an 'access' "
                            "key.")
    return creds.ec2_id(access)


def create(req: Req) -> webob.Response:
    body = req.member("credential")
    user_id = text(body, "user_id", required=True, max_len=64) or ""
    kind = text(body, "type", required=True) or ""
    blob = text(body, "blob", required=True, max_len=65_535) or ""
    project_id = text(body, "project_id", max_len=64)
    _mine_or_admin(req, user_id)
    if kind == "ec2" and project_id is None:
        raise IdentityError(400, "An ec2 credential needs a project_id.")
    credential_id = _ec2_id(blob) if kind == "ec2" else uuid.uuid4().hex
    with db.write(req.deps.engine) as conn:
        get_user(conn, user_id)
        if project_id is not None:
            get_project(conn, project_id)
        try:
            made = creds.create(conn, req.deps.cipher, creds.Credential(
                credential_id, user_id, kind, blob, project_id))
        except IdentityConflict as exc:
            raise conflict("credential", exc) from None
    return respond({"credential": _render(req, made)}, 201)


def listing(req: Req) -> webob.Response:
    user_id = req.param("user_id")
    if not req.is_admin:
        if user_id not in (None, req.who.user.id):
            return respond({"credentials": [], "links": links(req, "credentials")})
        user_id = req.who.user.id
    with db.read(req.deps.engine) as conn:
        found = creds.listing(conn, req.deps.cipher, user_id=user_id,
                              type_=req.param("type"))
    return respond({"credentials": [_render(req, c) for c in found],
                    "links": links(req, "credentials")})


def _get(req: Req, conn: Any) -> creds.Credential:
    found = creds.get(conn, req.deps.cipher, req.args["id"])
    if found is None or not (req.is_admin or found.user_id == req.who.user.id):
        raise not_found("credential", req.args["id"])
    return found


def show(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        return respond({"credential": _render(req, _get(req, conn))})


def update(req: Req) -> webob.Response:
    body = req.member("credential")
    with db.write(req.deps.engine) as conn:
        old = _get(req, conn)
        for key in ("user_id", "project_id", "type"):
            if key in body and body[key] != getattr(old, key):
                raise IdentityError(400, f"A credential's {key} cannot change; delete it "
                                    "and make a new one.")
        new = creds.Credential(old.id, old.user_id, old.type,
                               text(body, "blob", max_len=65_535) or old.blob,
                               old.project_id, old.created_at)
        if new.type == "ec2":
            _ec2_id(new.blob)   # still an ec2 blob
        creds.update(conn, req.deps.cipher, new)
    return respond({"credential": _render(req, new)})


def delete(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        creds.delete(conn, _get(req, conn).id)
    return no_content()


# ---- OS-EC2 ---------------------------------------------------------------------------

def _ec2(req: Req, c: creds.Credential) -> dict[str, Any]:
    body = c.ec2()
    body["links"] = {"self": f"{req.url}/users/{c.user_id}/credentials/OS-EC2/"
                             f"{body['access']}"}
    return body



def ec2_create(req: Req) -> webob.Response:
    _mine_or_admin(req, req.args["user"])
    body = req.body()
    project_id = body.get("tenant_id") if isinstance(body, dict) else None
    if not isinstance(project_id, str):
        raise IdentityError(400, "'tenant_id' (the project) is required.")
    access = uuid.uuid4().hex
    blob = {"access": access, "secret": uuid.uuid4().hex, "trust_id": None}
    with db.write(req.deps.engine) as conn:
        get_user(conn, req.args["user"])
        get_project(conn, project_id)
        made = creds.create(conn, req.deps.cipher, creds.Credential(
            creds.ec2_id(access), req.args["user"], "ec2", json.dumps(blob),
            project_id))
    return respond({"credential": _ec2(req, made)}, 201)


def ec2_list(req: Req) -> webob.Response:
    _mine_or_admin(req, req.args["user"])
    with db.read(req.deps.engine) as conn:
        get_user(conn, req.args["user"])
        found = creds.listing(conn, req.deps.cipher, user_id=req.args["user"], type_="ec2")
    return respond({"credentials": [_ec2(req, c) for c in found],
                    "links": links(req, f"users/{req.args['user']}/credentials/OS-EC2")})


def _ec2_get(req: Req, conn: Any) -> creds.Credential:
    found = creds.get(conn, req.deps.cipher, creds.ec2_id(req.args["access"]))
    if found is None or found.type != "ec2" or found.user_id != req.args["user"]:
        raise not_found("ec2 credential", req.args["access"])
    return found


def ec2_show(req: Req) -> webob.Response:
    _mine_or_admin(req, req.args["user"])
    with db.read(req.deps.engine) as conn:
        return respond({"credential": _ec2(req, _ec2_get(req, conn))})


def ec2_delete(req: Req) -> webob.Response:
    _mine_or_admin(req, req.args["user"])
    with db.write(req.deps.engine) as conn:
        creds.delete(conn, _ec2_get(req, conn).id)
    return no_content()
