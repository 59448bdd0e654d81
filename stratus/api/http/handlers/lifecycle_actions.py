"""``POST /servers/{id}/action``: the server lifecycle's actions (the moves are
``server_actions.py``'s). Each is a small handler: the body checked against its
schema, Nova's policy rule, one operation, Nova's answer.

=====================  ======  ===================================================
action                 answer  operation
=====================  ======  ===================================================
reboot                 202     ops.power (soft or hard)
os-stop, os-start      202     ops.power
pause, unpause         202     ops.power
suspend, resume        202     ops.power
rescue                 200     ops.power, ``{"adminPass"}``
unrescue               202     ops.power
trigger_crash_dump     202     ops.power (2.17)
lock, unlock           202     ops.locking (``locked_reason`` 2.73)
os-resetState          202     ops.locking (admin)
forceDelete, restore   202     ops.soft_delete
os-getConsoleOutput    200     the compute's console log, ``{"output"}``
rebuild, createImage           handlers.rebuild_image
=====================  ======  ===================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import webob

from stratus.api import passwords
from stratus.api.http import lifecycle_schemas as schemas
from stratus.api.http import policy
from stratus.api.http.errors import HTTPError
from stratus.api.http.handlers import rebuild_image
from stratus.api.http.wsgi import Req, empty_response, json_response, validate
from stratus.api.ops import images as image_ops
from stratus.api.ops import locking, power, server_info, soft_delete
from stratus.api.store.errors import BadRequest

ActionHandler = Callable[[Req, Any], webob.Response]


def _owner(req: Req) -> str | None:
    return None if req.is_admin else req.project_id


def _host_action(name: str, rule: str) -> ActionHandler:
    """An action the compute carries out with no arguments: 202."""
    def handle(req: Req, value: Any) -> webob.Response:
        req.authorize(rule)
        power.act(req.api, req.arg("server_id"), _owner(req), name, req.caller,
                  is_admin=req.is_admin)
        return empty_response(202)
    return handle


def reboot(req: Req, body: dict[str, Any]) -> webob.Response:
    validate(body, schemas.REBOOT)
    req.authorize("os_compute_api:servers:reboot")
    hard = body["reboot"]["type"].upper() == "HARD"
    power.reboot(req.api, req.arg("server_id"), _owner(req), hard, req.caller,
                 is_admin=req.is_admin)
    return empty_response(202)


def rescue(req: Req, body: dict[str, Any]) -> webob.Response:
    validate(body, schemas.RESCUE)
    req.authorize("os_compute_api:os-rescue")
    asked = body["rescue"] or {}
    image_ref = asked.get("rescue_image_ref")
    if image_ref:
        try:
            image_ref = image_ops.look_up(req.api.image, image_ref).id
        except BadRequest:
            raise BadRequest(f"Requested rescue image '{image_ref}' is not supported"
                             ) from None
    password = asked.get("adminPass") or passwords.generate(req.api.password_length)
    power.rescue(req.api, req.arg("server_id"), _owner(req), image_ref, req.caller,
                 is_admin=req.is_admin)
    return json_response({"adminPass": password} if req.api.enable_instance_password
                         else {})


def trigger_crash_dump(req: Req, body: dict[str, Any]) -> webob.Response:
    if not req.want.supports("trigger_crash_dump"):
        raise HTTPError(404, "The resource could not be found.")
    validate(body, schemas.TRIGGER_CRASH_DUMP)
    req.authorize("os_compute_api:servers:trigger_crash_dump")
    power.act(req.api, req.arg("server_id"), _owner(req), "trigger_crash_dump", req.caller,
              is_admin=req.is_admin)
    return empty_response(202)


def lock(req: Req, body: dict[str, Any]) -> webob.Response:
    with_reason = req.want.supports("locked_reason")
    validate(body, schemas.LOCK_273 if with_reason else schemas.LOCK)
    req.authorize("os_compute_api:os-lock-server:lock")
    reason = (body["lock"] or {}).get("locked_reason") if with_reason else None
    locking.lock(req.api, req.arg("server_id"), _owner(req), reason, req.caller)
    return empty_response(202)


def unlock(req: Req, body: dict[str, Any]) -> webob.Response:
    req.authorize("os_compute_api:os-lock-server:unlock")
    locking.unlock(req.api, req.arg("server_id"), _owner(req), req.caller,
                   may_override=policy.allowed(req.ctx, UNLOCK_OVERRIDE))
    return empty_response(202)


UNLOCK_OVERRIDE = "os_compute_api:os-lock-server:unlock:unlock_override"


def reset_state(req: Req, body: dict[str, Any]) -> webob.Response:
    validate(body, schemas.RESET_STATE)
    req.authorize("os_compute_api:os-admin-actions:reset_state")
    locking.reset_state(req.api, req.arg("server_id"), body["os-resetState"]["state"],
                        req.caller)
    return empty_response(202)


def force_delete(req: Req, body: dict[str, Any]) -> webob.Response:
    req.authorize("os_compute_api:os-deferred-delete:force")
    soft_delete.force_delete(req.api, req.arg("server_id"), _owner(req), req.caller,
                             is_admin=req.is_admin)
    return empty_response(202)


def restore(req: Req, body: dict[str, Any]) -> webob.Response:
    req.authorize("os_compute_api:os-deferred-delete:restore")
    soft_delete.restore(req.api, req.arg("server_id"), _owner(req), req.caller,
                        is_admin=req.is_admin)
    return empty_response(202)


def console_output(req: Req, body: dict[str, Any]) -> webob.Response:
    validate(body, schemas.CONSOLE_OUTPUT)
    req.authorize("os_compute_api:os-console-output")
    raw = body["os-getConsoleOutput"].get("length")
    length = None if raw is None else int(raw)
    if length is not None and length < -1:
        raise BadRequest(f"Invalid input for field/attribute length. Value: {raw}. "
                         f"{raw} is less than the minimum of -1")
    tail = None if length is None or length == -1 else length
    output = server_info.console_output(req.api, req.arg("server_id"), _owner(req), tail)
    return json_response({"output": output})


ACTIONS: dict[str, ActionHandler] = {
    "reboot": reboot,
    "os-stop": _host_action("stop", "os_compute_api:servers:stop"),
    "os-start": _host_action("start", "os_compute_api:servers:start"),
    "pause": _host_action("pause", "os_compute_api:os-pause-server:pause"),
    "unpause": _host_action("unpause", "os_compute_api:os-pause-server:unpause"),
    "suspend": _host_action("suspend", "os_compute_api:os-suspend-server:suspend"),
    "resume": _host_action("resume", "os_compute_api:os-suspend-server:resume"),
    "rescue": rescue,
    "unrescue": _host_action("unrescue", "os_compute_api:os-unrescue"),
    "trigger_crash_dump": trigger_crash_dump,
    "lock": lock,
    "unlock": unlock,
    "os-resetState": reset_state,
    "forceDelete": force_delete,
    "restore": restore,
    "os-getConsoleOutput": console_output,
    "rebuild": rebuild_image.rebuild,
    "createImage": rebuild_image.create_image,
}
