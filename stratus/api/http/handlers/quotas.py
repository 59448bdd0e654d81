"""/os-quota-sets, /os-quota-class-sets and /limits: a project's quota, as Nova shows it.

Shapes by microversion: until 2.35 quota sets and /limits carry nova-network's
quotas (fixed_ips, floating_ips, security_groups, security_group_rules; unlimited and
never used here); quota class sets carry them until 2.49 and show server_groups and
server_group_members from 2.50; /limits loses maxImageMeta at 2.39; from 2.57 the
injected_file* quotas and the personality limits are gone.

Per-user quotas, as Nova's database quota driver keeps them: ``?user_id=`` on show,
detail, update and delete reads or sets that user's own limits within the project (a
limit the user has none of is the project's). A user's limit is at least what the user
uses and at most what the project's limit leaves after the other users' own limits; a
project's is at least the sum of its users' own limits (``force`` skips both checks).
"""

from __future__ import annotations

from typing import Any

import webob

from stratus.api.http.schemas import boolean, quota_update
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import quotas as ops
from stratus.api.store import quotas as store
from stratus.api.store.errors import BadRequest, Forbidden
from stratus.storage import engine as db

# Nova's /limits names for each quota resource.
_LIMIT_NAMES = {"cores": ("maxTotalCores",), "instances": ("maxTotalInstances",),
                "ram": ("maxTotalRAMSize",), "key_pairs": ("maxTotalKeypairs",),
                "metadata_items": ("maxServerMeta", "maxImageMeta"),
                "server_groups": ("maxServerGroups",),
                "server_group_members": ("maxServerGroupMembers",),
                "injected_files": ("maxPersonality",),
                "injected_file_content_bytes": ("maxPersonalitySize",),
                "floating_ips": ("maxTotalFloatingIps",),
                "security_groups": ("maxSecurityGroups",),
                "security_group_rules": ("maxSecurityGroupRules",)}
_USED_NAMES = {"instances": "totalInstancesUsed", "cores": "totalCoresUsed",
               "ram": "totalRAMUsed", "server_groups": "totalServerGroupsUsed",
               "floating_ips": "totalFloatingIpsUsed",
               "security_groups": "totalSecurityGroupsUsed"}
MAX_ID = 255   # project ids and class names, as the tables keep them
_GROUPS = ("server_groups", "server_group_members")


def _shown(req: Req, *, classes: bool = False) -> tuple[str, ...]:
    """The quota resources this microversion shows in quota sets (``classes``: in quota
    class sets, which drop the network quotas and gain the server group ones at 2.50)."""
    out = ops.RESOURCES + ops.NETWORK
    if req.want.supports("quota_class_groups" if classes else "no_proxy_apis"):
        out = tuple(r for r in out if r not in ops.NETWORK)
    if req.want.supports("no_injected_files"):
        out = tuple(r for r in out if r not in ops.INJECTED)
    if classes and not req.want.supports("quota_class_groups"):
        out = tuple(r for r in out if r not in _GROUPS)
    return out


def _settable(req: Req, *, classes: bool = False) -> tuple[str, ...]:
    """What an update takes: what is shown (a class set takes the server group
    quotas before 2.50 too, though it does not show them)."""
    out = _shown(req, classes=classes)
    if classes and not req.want.supports("quota_class_groups"):
        out += _GROUPS
    return out


def _user(req: Req) -> str | None:
    user_id = req.query("user_id")
    if user_id is not None and len(user_id) > MAX_ID:
        raise BadRequest(f"A user id is at most {MAX_ID} characters.")
    return user_id or None


def _project(req: Req) -> str:
    project_id = req.arg("project_id")
    if len(project_id) > MAX_ID:
        raise BadRequest(f"A project id is at most {MAX_ID} characters.")
    return project_id


def _target(req: Req, action: str) -> str:
    """The project in the path; a caller who is not an admin may only name their own."""
    req.authorize(action)
    project_id = _project(req)
    if project_id != req.project_id and not req.is_admin:
        # Nova's answer when the project-scoped rule does not match.
        raise Forbidden(f"Policy doesn't allow {action} to be performed.")
    return project_id


def _quota_set(req: Req, limits: dict[str, int], ident: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {r: limits[r] for r in _shown(req)}
    if ident is not None:
        body["id"] = ident
    return body


def _class_set(req: Req, limits: dict[str, int], ident: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {r: limits[r] for r in _shown(req, classes=True)}
    if ident is not None:
        body["id"] = ident
    return body


def show_quota_set(req: Req) -> webob.Response:
    project_id = _target(req, "os_compute_api:os-quota-sets:show")
    limits = ops.limits(req.api.dbs.api, req.api.quota_defaults, project_id, _user(req))
    return json_response({"quota_set": _quota_set(req, limits, project_id)})


def show_quota_set_detail(req: Req) -> webob.Response:
    project_id = _target(req, "os_compute_api:os-quota-sets:detail")
    limits, used = ops.state(req.api.dbs.api, req.api.quota_defaults, project_id, shown=True,
                             servers=req.api.count_servers, user_id=_user(req))
    body: dict[str, Any] = {r: {"in_use": used.of(r), "limit": limits[r], "reserved": 0}
                            for r in _shown(req)}
    body["id"] = project_id
    return json_response({"quota_set": body})


def show_defaults(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-sets:defaults")
    limits = ops.limits(req.api.dbs.api, req.api.quota_defaults, None)
    return json_response({"quota_set": _quota_set(req, limits, req.arg("project_id"))})


def _parsed(values: dict[str, Any]) -> dict[str, int]:
    return {r: int(v) for r, v in values.items() if r != "force"}


def _class_limits(req: Req, conn: Any, name: str) -> dict[str, int]:
    limits = dict.fromkeys(ops.NETWORK, ops.UNLIMITED)
    limits.update(req.api.quota_defaults)
    limits.update(store.class_limits(conn, name))
    return limits


def _inf(limit: int) -> float:
    return float("inf") if limit < 0 else limit


def _check_range(resource: str, limit: int, minimum: int, maximum: int) -> None:
    """Nova's _validate_quota_limit, in its words (-1 is unlimited)."""
    if _inf(limit) < _inf(minimum):
        raise BadRequest(f"Quota limit {limit} for {resource} must be greater than or equal "
                         f"to already used and reserved {minimum}.")
    if _inf(limit) > _inf(maximum):
        raise BadRequest(f"Quota limit {limit} for {resource} must be less than or equal "
                         f"to {maximum}.")


def _settable_range(conn: Any, defaults: dict[str, int], project_id: str,
                    user_id: str | None, used: store.Usage, resource: str
                    ) -> tuple[int, int]:
    """(minimum, maximum) a limit may be set to (Nova's get_settable_quotas)."""
    project_limit = ops.limits_in(conn, defaults, project_id)[resource]
    handed_out = store.users_limits(conn, project_id).get(resource, 0)
    if user_id is None:
        given = -1 if project_limit < 0 else handed_out
        return max(given, used.of(resource)), -1
    own = store.user_limits(conn, project_id, user_id).get(resource, 0)
    maximum = -1 if project_limit < 0 or own < 0 else project_limit - handed_out + own
    return used.of(resource), maximum


def update_quota_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-sets:update")
    project_id = _project(req)
    user_id = _user(req)
    data = req.body(quota_update("quota_set", _settable(req), True))["quota_set"]
    force = boolean(data.get("force", False))
    wanted = _parsed(data)
    engine = req.api.dbs.api
    counted = ops.state(engine, req.api.quota_defaults, project_id, shown=True,
                        servers=req.api.count_servers)[1] \
        if req.api.count_servers is not None and user_id is None else None
    with db.write(engine) as conn:
        if not force:
            used = counted or store.usage(conn, project_id, user_id=user_id)
            for resource, limit in sorted(wanted.items()):
                _check_range(resource, limit, *_settable_range(
                    conn, req.api.quota_defaults, project_id, user_id, used, resource))
        if user_id is None:
            store.set_project_limits(conn, project_id, wanted)
        else:
            store.set_user_limits(conn, project_id, user_id, wanted)
        limits = ops.limits_in(conn, req.api.quota_defaults, project_id, user_id)
    return json_response({"quota_set": _quota_set(req, limits, None)})


def delete_quota_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-sets:delete")
    project_id, user_id = _project(req), _user(req)
    with db.write(req.api.dbs.api) as conn:
        if user_id is None:
            store.delete_project_limits(conn, project_id)
        else:
            store.delete_user_limits(conn, project_id, user_id)
    return empty_response(202)


def show_quota_class_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-class-sets:show")
    name = req.arg("class_name")
    with db.read(req.api.dbs.api) as conn:
        limits = _class_limits(req, conn, name)
    return json_response({"quota_class_set": _class_set(req, limits, name)})


def update_quota_class_set(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-quota-class-sets:update")
    name = req.arg("class_name")
    if len(name) > MAX_ID:
        raise BadRequest(f"A quota class name is at most {MAX_ID} characters.")
    schema = quota_update("quota_class_set", _settable(req, classes=True), False)
    wanted = _parsed(req.body(schema)["quota_class_set"])
    with db.write(req.api.dbs.api) as conn:
        store.set_class_limits(conn, name, wanted)
        limits = _class_limits(req, conn, name)
    return json_response({"quota_class_set": _class_set(req, limits, None)})


def show_limits(req: Req) -> webob.Response:
    req.authorize("os_compute_api:limits")
    project_id = req.project_id
    other = req.query("tenant_id")
    if other is not None and other != project_id:
        req.authorize("os_compute_api:limits:other_project")
        project_id = other
    limits, used = ops.state(req.api.dbs.api, req.api.quota_defaults, project_id, shown=True,
                             servers=req.api.count_servers)
    shown = _shown(req)
    absolute: dict[str, int] = {name: limits[r] for r in shown
                                for name in _LIMIT_NAMES.get(r, ())}
    if req.want.supports("no_image_metadata_limit"):
        absolute.pop("maxImageMeta", None)
    absolute.update({name: used.of(r) for r, name in _USED_NAMES.items() if r in shown})
    return json_response({"limits": {"rate": [], "absolute": absolute}})
