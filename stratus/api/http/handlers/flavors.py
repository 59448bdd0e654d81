"""/flavors, /flavors/{id}/os-extra_specs and /flavors/{id}/os-flavor-access."""

from __future__ import annotations

from urllib.parse import urlencode

import webob

from stratus.api.http import render
from stratus.api.http.errors import HTTPError
from stratus.api.http.schemas import (
    EXTRA_SPEC_ONE,
    EXTRA_SPECS,
    FLAVOR_ACTION,
    FLAVOR_CREATE,
    FLAVOR_UPDATE,
    boolean,
)
from stratus.api.http.views import flavors as views
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops.servers import check_extra_specs
from stratus.api.store import flavors as store
from stratus.api.store.errors import BadRequest, Conflict, NotFound
from stratus.storage import engine as db


def _int_query(req: Req, name: str) -> int:
    raw = req.query(name)
    if raw is None:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"Invalid {name} filter [{raw}]") from None
    return max(min(value, 2**31 - 1), 0)   # 32-bit columns: no flavor has more


_LIST_QUERY = frozenset({"limit", "marker", "is_public", "minRam", "minDisk", "sort_key",
                         "sort_dir"})


def _is_public(req: Req) -> bool | None:
    """Nova's: admins may ask for private flavors ("none" or "all": every flavor); other
    callers see public ones and the private ones their project may use."""
    raw = req.query("is_public")
    if not req.is_admin or raw is None:
        return True
    if raw.strip().lower() in ("none", "all"):
        return None
    try:
        return req.query_bool("is_public")
    except BadRequest:
        raise BadRequest(f"Invalid is_public filter [{raw}]") from None


def _list(req: Req, detail: bool) -> webob.Response:
    req.authorize("os_compute_api:flavors")
    req.check_query(_LIST_QUERY, strict=req.want.supports("strict_query"))
    sort_key = req.query("sort_key") or "flavorid"
    sort_dir = req.query("sort_dir") or "asc"
    if sort_key not in store.SORT_KEYS:
        raise BadRequest(f"Invalid input for query parameters sort_key. Value: {sort_key}. "
                         f"It is not one of {sorted(store.SORT_KEYS)}.")
    if sort_dir not in ("asc", "desc"):
        raise BadRequest(f"Invalid input for query parameters sort_dir. Value: {sort_dir}. "
                         "It is not one of ['asc', 'desc'].")
    limit = req.query_int("limit")
    limit = req.api.max_limit if limit is None else min(limit, req.api.max_limit)
    marker = req.query("marker")
    try:
        with db.read(req.api.dbs.api) as conn:
            flavors = store.list_all(conn, is_public=_is_public(req),
                                     project_id=None if req.is_admin else req.project_id,
                                     min_ram=_int_query(req, "minRam"),
                                     min_disk=_int_query(req, "minDisk"), sort_key=sort_key,
                                     sort_dir=sort_dir, limit=limit, marker=marker)
    except NotFound:
        raise BadRequest(f"marker [{marker}] not found") from None
    body: dict[str, object] = {"flavors": [render.flavor(req, f, detail) for f in flavors]}
    if req.query("limit") is not None and flavors and len(flavors) == limit:
        pairs = [(k, v) for k, v in req.query_pairs if k != "marker"]
        pairs.append(("marker", flavors[-1].flavorid))
        path = "/flavors/detail" if detail else "/flavors"
        body["flavors_links"] = [{"rel": "next", "href": f"{req.webob.host_url}"
                                  f"{req.webob.script_name}/v2.1{path}?{urlencode(pairs)}"}]
    return json_response(body)


def list_flavors(req: Req) -> webob.Response:
    return _list(req, detail=False)


def list_flavors_detail(req: Req) -> webob.Response:
    return _list(req, detail=True)


def _get(req: Req) -> store.Flavor:
    """The path's flavor, if the caller may see it (private ones: admins, and the
    projects given access)."""
    with db.read(req.api.dbs.api) as conn:
        flavor = store.get(conn, req.arg("flavor_id"))
        if req.is_admin or store.has_access(conn, flavor, req.project_id):
            return flavor
    raise NotFound(f"Flavor {flavor.flavorid} could not be found.")


def show_flavor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:flavors")
    return json_response({"flavor": render.flavor(req, _get(req))})


def _int(value: int | str) -> int:
    return int(value)


def create_flavor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-manage:create")
    data = req.body(FLAVOR_CREATE)["flavor"]
    if "description" in data and not req.want.supports("flavor_description"):
        raise BadRequest("Invalid input for field/attribute flavor. Additional properties "
                         "are not allowed ('description' was unexpected) before 2.55.")
    flavor_id = data.get("id")
    if isinstance(flavor_id, float) and flavor_id.is_integer():
        flavor_id = int(flavor_id)
    with db.write(req.api.dbs.api) as conn:
        flavor = store.create(
            conn, name=data["name"], vcpus=_int(data["vcpus"]), memory_mb=_int(data["ram"]),
            root_gb=_int(data["disk"]),
            ephemeral_gb=_int(data.get("OS-FLV-EXT-DATA:ephemeral", 0)),
            swap=_int(data.get("swap", 0)),
            flavorid=str(flavor_id) if flavor_id is not None else None,
            is_public=boolean(data.get("os-flavor-access:is_public", True)),
            description=data.get("description"),
            rxtx_factor=float(data.get("rxtx_factor", 1.0)))
    return json_response({"flavor": render.flavor(req, flavor)})


def update_flavor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-manage:update")
    if not req.want.supports("flavor_description"):
        raise HTTPError(404, "The resource could not be found.")
    data = req.body(FLAVOR_UPDATE)["flavor"]
    with db.write(req.api.dbs.api) as conn:
        flavor = store.update_description(conn, req.arg("flavor_id"), data["description"])
    return json_response({"flavor": render.flavor(req, flavor)})


def delete_flavor(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-manage:delete")
    with db.write(req.api.dbs.api) as conn:
        store.delete(conn, req.arg("flavor_id"))
    return empty_response(202)


# ---- access --------------------------------------------------------------------------


def list_access(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-access")
    with db.read(req.api.dbs.api) as conn:
        flavor = store.get(conn, req.arg("flavor_id"))
        if flavor.is_public:
            raise NotFound("Access list not available for public flavors.")
        return json_response(views.access(flavor, store.projects(conn, flavor)))


def flavor_action(req: Req) -> webob.Response:
    body = req.body(FLAVOR_ACTION)
    action, data = next(iter(body.items()))
    add = action == "addTenantAccess"
    req.authorize("os_compute_api:os-flavor-access:"
                  f"{'add' if add else 'remove'}_tenant_access")
    with db.write(req.api.dbs.api) as conn:
        flavor = store.get(conn, req.arg("flavor_id"))
        if add:
            if flavor.is_public and req.want.supports("flavor_access_public_conflict"):
                raise Conflict("Can not add access to a public flavor.")
            store.add_access(conn, flavor, data["tenant"])
        else:
            store.remove_access(conn, flavor, data["tenant"])
        return json_response(views.access(flavor, store.projects(conn, flavor)))


# ---- extra specs ---------------------------------------------------------------------


def list_extra_specs(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-extra-specs:index")
    return json_response({"extra_specs": dict(_get(req).extra_specs)})


def show_extra_spec(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-extra-specs:show")
    flavor, key = _get(req), req.arg("key")
    if key not in flavor.extra_specs:
        raise NotFound(f"Flavor {flavor.flavorid} has no extra specs with key {key}.")
    return json_response({key: flavor.extra_specs[key]})


def _spec_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _set_specs(req: Req, specs: dict[str, str]) -> store.Flavor:
    with db.write(req.api.dbs.api) as conn:
        flavor = store.get(conn, req.arg("flavor_id"))
        check_extra_specs({**flavor.extra_specs, **specs})
        return store.set_extra_specs(conn, flavor.flavorid, specs)


def create_extra_specs(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-extra-specs:create")
    specs = {k: _spec_text(v) for k, v in req.body(EXTRA_SPECS)["extra_specs"].items()}
    _set_specs(req, specs)
    return json_response({"extra_specs": specs})


def update_extra_spec(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-extra-specs:update")
    key = req.arg("key")
    body = req.body(EXTRA_SPEC_ONE)
    if key not in body:
        raise BadRequest("Request body and URI mismatch")
    specs = {key: _spec_text(body[key])}
    _set_specs(req, specs)
    return json_response(specs)


def delete_extra_spec(req: Req) -> webob.Response:
    req.authorize("os_compute_api:os-flavor-extra-specs:delete")
    with db.write(req.api.dbs.api) as conn:
        store.delete_extra_spec(conn, req.arg("flavor_id"), req.arg("key"))
    return empty_response(202)
