"""The two actions that take an image: ``rebuild`` (202 with the server as it now is, and
its admin password) and ``createImage`` (202; the image's Location before 2.45,
``{"image_id"}`` from it). Also what update and rebuild answer: before 2.75 Nova
answers them with a reduced server (no availability zone, usage times, extended
status or attributes, security groups...); from 2.75 with the whole one."""

from __future__ import annotations

from typing import Any

import webob

from stratus.api import passwords
from stratus.api.http import lifecycle_schemas as schemas
from stratus.api.http.handlers.access_ips import access_ip
from stratus.api.http.handlers.servers import shown
from stratus.api.http.wsgi import Req, empty_response, json_response, validate
from stratus.api.ops import rebuild as rebuild_ops
from stratus.api.ops import snapshot
from stratus.api.store import keypairs as keypair_store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.api.store.servers import Server
from stratus.storage import engine as db

# What a reduced answer (update, rebuild before 2.75) leaves out of the server.
_FULL_ONLY_PREFIXES = ("OS-EXT-AZ:", "OS-SRV-USG:", "OS-EXT-STS:", "OS-EXT-SRV-ATTR:",
                       "os-extended-volumes:")
_FULL_ONLY = ("config_drive", "key_name", "security_groups", "host_status")


def answered(req: Req, server: Server, *, rebuilt: bool = False) -> dict[str, Any]:
    """The server as ``PUT /servers/{id}`` (or rebuild, ``rebuilt``) answers it."""
    body = shown(req, server)
    if req.want.supports("full_server_answers"):
        if rebuilt:   # Nova's rebuild adds user_data itself (2.57), not the view
            body.pop("OS-EXT-SRV-ATTR:user_data", None)
    else:
        keep_hostname = req.want.supports("server_hostname")
        for key in list(body):
            if key == "OS-EXT-SRV-ATTR:hostname" and keep_hostname:
                continue
            if key.startswith(_FULL_ONLY_PREFIXES) or key in _FULL_ONLY:
                body.pop(key)
        if rebuilt and req.want.supports("rebuild_key_name"):
            body["key_name"] = server.key_name
    if not req.want.supports("server_groups_in_server"):
        body.pop("server_groups", None)
    return body


def key_pair(req: Req, name: str | None, user_id: str) -> str | None:
    """A key pair a request names must be its user's (400 otherwise, as Nova)."""
    if name is None:
        return None
    with db.read(req.api.dbs.api) as conn:
        try:
            keypair_store.get(conn, user_id, name)
        except NotFound:
            raise BadRequest("Invalid key_name provided.") from None
    return name


def rebuild(req: Req, body: dict[str, Any]) -> webob.Response:
    want = req.want
    validate(body, schemas.rebuild(description=want.supports("server_description"),
                                   key_name=want.supports("rebuild_key_name"),
                                   user_data=want.supports("no_injected_files"),
                                   hostname=want.supports("server_hostname")))
    req.authorize("os_compute_api:servers:rebuild")
    data = body["rebuild"]
    changes: dict[str, Any] = {}
    if "name" in data:
        changes["name"] = data["name"]
    for field, column, version in (("accessIPv4", "access_ip_v4", 4),
                                   ("accessIPv6", "access_ip_v6", 6)):
        if field in data:
            changes[column] = access_ip(data[field], version, field) if data[field] else None
    if "description" in data:
        changes["description"] = data["description"]
    if "hostname" in data:
        changes["hostname"] = data["hostname"]
    if "user_data" in data:
        changes["user_data"] = data["user_data"]
    if "key_name" in data:
        owner = req.ctx.user_id or ""
        changes["key_name"] = key_pair(req, data["key_name"], owner)
    password = data.get("adminPass") or passwords.generate(req.api.password_length)
    server = rebuild_ops.rebuild(
        req.api, req.arg("server_id"), None if req.is_admin else req.project_id,
        rebuild_ops.Rebuild(data["imageRef"], changes, data.get("metadata")), req.caller,
        is_admin=req.is_admin)
    out = answered(req, server, rebuilt=True)
    if req.api.enable_instance_password:
        out["adminPass"] = password
    if want.supports("no_injected_files"):
        out["user_data"] = server.user_data
    resp = json_response({"server": out}, status=202)
    resp.headers["Location"] = req.link(f"/servers/{server.uuid}")[0]["href"]
    return resp


def create_image(req: Req, body: dict[str, Any]) -> webob.Response:
    validate(body, schemas.CREATE_IMAGE)
    req.authorize("os_compute_api:servers:create_image")
    data = body["createImage"]
    image = snapshot.create_image(
        req.api, req.arg("server_id"), None if req.is_admin else req.project_id,
        data["name"], data.get("metadata") or {}, req.caller, tuple(req.ctx.roles),
        is_admin=req.is_admin)
    if req.want.supports("create_image_body"):
        return json_response({"image_id": image["id"]}, status=202)
    resp = empty_response(202)
    base = req.webob.host_url + req.webob.script_name
    resp.headers["Location"] = f"{base}/v2.1/images/{image['id']}"
    return resp
