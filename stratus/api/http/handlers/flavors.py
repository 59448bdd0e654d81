"""/flavors and /flavors/{id}/os-extra_specs."""

from __future__ import annotations

import webob

from stratus.api.http import render
from stratus.api.http.errors import HTTPError
from stratus.api.http.schemas import EXTRA_SPEC_ONE, EXTRA_SPECS, FLAVOR_CREATE, FLAVOR_UPDATE
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops.servers import check_extra_specs
from stratus.api.store import flavors as store
from stratus.api.store.errors import BadRequest, NotFound
from stratus.storage import engine as db


def _int_query(req: Req, name: str) -> int:
    raw = req.query(name)
    if raw is None:
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"Invalid {name} filter [{raw}]") from None
    if value < 0:
        raise BadRequest(f"Invalid {name} filter [{raw}]")
    return min(value, 2**31 - 1)   # 32-bit columns: no flavor has more


def _list(req: Req, detail: bool) -> webob.Response:
    req.authorize("os_compute_api:flavors")
    is_public: bool | None = True
    raw = req.query("is_public")
    if req.is_admin and raw is not None:
        is_public = None if raw.strip().lower() in ("none", "all") else \
            req.query_bool("is_public")
    with db.read(req.api.dbs.api) as conn:
        flavors = store.list_all(conn, is_public=is_public,
                                 min_ram=_int_query(req, "minRam"),
                                 min_disk=_int_query(req, "minDisk"))
    return json_response({"flavors": [render.flavor(req, f, detail) for f in flavors]})


def list_flavors(req: Req) -> webob.Response:
    return _list(req, detail=False)


def list_flavors_detail(req: Req) -> webob.Response:
    return _list(req, detail=True)


def _get(req: Req) -> store.Flavor:
    with db.read(req.api.dbs.api) as conn:
        flavor = store.get(conn, req.arg("flavor_id"))
    if not flavor.is_public and not req.is_admin:
        raise NotFound(f"Flavor {flavor.flavorid} could not be found.")
    return flavor


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
    with db.write(req.api.dbs.api) as conn:
        flavor = store.create(
            conn, name=data["name"], vcpus=_int(data["vcpus"]), memory_mb=_int(data["ram"]),
            root_gb=_int(data["disk"]),
            ephemeral_gb=_int(data.get("OS-FLV-EXT-DATA:ephemeral", 0)),
            swap=_int(data.get("swap", 0)), flavorid=data.get("id"),
            is_public=data.get("os-flavor-access:is_public", True),
            description=data.get("description"))
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
