"""``/v3/services``, ``/v3/endpoints``, ``/v3/regions``: the service catalog, read and
changed through the API (services and endpoints by admins, regions read by anyone)."""

from __future__ import annotations

from typing import Any

import webob

from stratus.identity import endpoints as catalog
from stratus.identity.catalog import INTERFACES
from stratus.identity.http.common import (
    Req,
    conflict,
    flag,
    links,
    no_content,
    not_found,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.identity.model import IdentityConflict
from stratus.identity.store import new_id
from stratus.storage import engine as db

# ---- services -------------------------------------------------------------------------


def _service(req: Req, s: catalog.Service) -> dict[str, Any]:
    body: dict[str, Any] = {"id": s.id, "type": s.type, "enabled": s.enabled,
                            "links": {"self": f"{req.url}/services/{s.id}"}}
    if s.name is not None:
        body["name"] = s.name
    if s.description is not None:
        body["description"] = s.description
    return body


def _get_service(conn: Any, service_id: str) -> catalog.Service:
    found = catalog.get_service(conn, service_id)
    if found is None:
        raise not_found("service", service_id)
    return found


def create_service(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("service")
    made = catalog.Service(new_id(), text(body, "type", required=True) or "",
                           text(body, "name"), text(body, "description", empty_ok=True,
                                                    max_len=65_535),
                           flag(body, "enabled") is not False)
    with db.write(req.deps.engine) as conn:
        catalog.save_service(conn, made)
    return respond({"service": _service(req, made)}, 201)


def list_services(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        found = catalog.services(conn, type_=req.param("type"), name=req.param("name"))
    return respond({"services": [_service(req, s) for s in found],
                    "links": links(req, "services")})


def show_service(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        return respond({"service": _service(req, _get_service(conn, req.args["id"]))})


def update_service(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("service")
    with db.write(req.deps.engine) as conn:
        old = _get_service(conn, req.args["id"])
        new = catalog.Service(
            old.id, (text(body, "type", required=True) or old.type) if "type" in body
            else old.type,
            text(body, "name") if "name" in body else old.name,
            text(body, "description", empty_ok=True, max_len=65_535)
            if "description" in body else old.description,
            bool(flag(body, "enabled")) if "enabled" in body else old.enabled)
        catalog.save_service(conn, new)
    return respond({"service": _service(req, new)})


def delete_service(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not catalog.delete_service(conn, req.args["id"]):
            raise not_found("service", req.args["id"])
    return no_content()


# ---- endpoints ------------------------------------------------------------------------

def _endpoint(req: Req, e: catalog.Endpoint) -> dict[str, Any]:
    return {"id": e.id, "service_id": e.service_id, "interface": e.interface, "url": e.url,
            "region": e.region_id, "region_id": e.region_id, "enabled": e.enabled,
            "links": {"self": f"{req.url}/endpoints/{e.id}"}}


def _interface(body: dict[str, Any] | Any) -> str:
    value = body.get("interface")
    if value not in INTERFACES:
        raise IdentityError(400, f"Invalid input for field 'interface': {value!r} is not "
                            f"one of {', '.join(INTERFACES)}.")
    return str(value)


def _region_of(conn: Any, body: Any) -> str | None:
    """``region_id`` must name a region; the older ``region`` makes it if missing (as
    Keystone still does for clients that send it)."""
    if body.get("region_id") is not None:
        region = text(body, "region_id")
        if catalog.get_region(conn, region or "") is None:
            raise IdentityError(400, f"Region {region} does not exist.")
        return region
    region = text(body, "region")
    if region is not None and catalog.get_region(conn, region) is None:
        catalog.create_region(conn, catalog.Region(region))
    return region


def _url(body: Any) -> str:
    value = body.get("url")
    if not isinstance(value, str) or not value.strip() or len(value) > 225:
        raise IdentityError(400, "Invalid input for field 'url': a URL of 1 to 225 "
                            "characters is expected.")
    return value


def create_endpoint(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("endpoint")
    with db.write(req.deps.engine) as conn:
        service_id = text(body, "service_id", required=True, max_len=64) or ""
        if catalog.get_service(conn, service_id) is None:
            raise IdentityError(400, f"Service {service_id} does not exist.")
        made = catalog.Endpoint(new_id(), service_id, _interface(body), _url(body),
                                _region_of(conn, body), flag(body, "enabled") is not False)
        catalog.save_endpoint(conn, made)
    return respond({"endpoint": _endpoint(req, made)}, 201)


def list_endpoints(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        found = catalog.endpoints(conn, interface=req.param("interface"),
                                  service_id=req.param("service_id"),
                                  region_id=req.param("region_id"))
    return respond({"endpoints": [_endpoint(req, e) for e in found],
                    "links": links(req, "endpoints")})


def _get_endpoint(conn: Any, endpoint_id: str) -> catalog.Endpoint:
    found = catalog.get_endpoint(conn, endpoint_id)
    if found is None:
        raise not_found("endpoint", endpoint_id)
    return found


def show_endpoint(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        return respond({"endpoint": _endpoint(req, _get_endpoint(conn, req.args["id"]))})


def update_endpoint(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("endpoint")
    with db.write(req.deps.engine) as conn:
        old = _get_endpoint(conn, req.args["id"])
        service_id = old.service_id
        if "service_id" in body:
            service_id = text(body, "service_id", required=True, max_len=64) or ""
            if catalog.get_service(conn, service_id) is None:
                raise IdentityError(400, f"Service {service_id} does not exist.")
        new = catalog.Endpoint(
            old.id, service_id, _interface(body) if "interface" in body else old.interface,
            _url(body) if "url" in body else old.url,
            _region_of(conn, body) if "region_id" in body or "region" in body
            else old.region_id,
            bool(flag(body, "enabled")) if "enabled" in body else old.enabled)
        catalog.save_endpoint(conn, new)
    return respond({"endpoint": _endpoint(req, new)})


def delete_endpoint(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not catalog.delete_endpoint(conn, req.args["id"]):
            raise not_found("endpoint", req.args["id"])
    return no_content()


# ---- regions --------------------------------------------------------------------------

def _region(req: Req, r: catalog.Region) -> dict[str, Any]:
    return {"id": r.id, "description": r.description, "parent_region_id": r.parent_region_id,
            "links": {"self": f"{req.url}/regions/{r.id}"}}


def _parent(conn: Any, body: Any, region_id: str | None) -> str | None:
    parent = text(body, "parent_region_id")
    if parent is None:
        return None
    if catalog.get_region(conn, parent) is None:
        raise IdentityError(400, f"Parent region {parent} does not exist.")
    if region_id is not None and (parent == region_id or
                                  region_id in catalog.ancestors(conn, parent)):
        raise IdentityError(400, "A region cannot be its own ancestor.")
    return parent


def _create_region(req: Req, region_id: str | None) -> webob.Response:
    req.require_admin()
    body = req.member("region")
    if region_id is None:
        region_id = text(body, "id") or new_id()
    elif body.get("id") not in (None, region_id):
        raise IdentityError(400, "The region id in the body is not the one in the URL.")
    with db.write(req.deps.engine) as conn:
        made = catalog.Region(region_id, text(body, "description", empty_ok=True,
                                              max_len=65_535) or "",
                              _parent(conn, body, region_id))
        try:
            catalog.create_region(conn, made)
        except IdentityConflict as exc:
            raise conflict("region", exc) from None
    return respond({"region": _region(req, made)}, 201)


def create_region(req: Req) -> webob.Response:
    return _create_region(req, None)


def create_region_with_id(req: Req) -> webob.Response:
    return _create_region(req, req.args["id"])


def list_regions(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = catalog.regions(conn, parent_region_id=req.param("parent_region_id"))
    return respond({"regions": [_region(req, r) for r in found],
                    "links": links(req, "regions")})


def _get_region(conn: Any, region_id: str) -> catalog.Region:
    found = catalog.get_region(conn, region_id)
    if found is None:
        raise not_found("region", region_id)
    return found


def show_region(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        return respond({"region": _region(req, _get_region(conn, req.args["id"]))})


def update_region(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("region")
    with db.write(req.deps.engine) as conn:
        old = _get_region(conn, req.args["id"])
        new = catalog.Region(
            old.id, (text(body, "description", empty_ok=True, max_len=65_535) or "")
            if "description" in body else old.description,
            _parent(conn, body, old.id) if "parent_region_id" in body
            else old.parent_region_id)
        catalog.update_region(conn, new)
    return respond({"region": _region(req, new)})


def delete_region(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        try:
            if not catalog.delete_region(conn, req.args["id"]):
                raise not_found("region", req.args["id"])
        except catalog.InUse as exc:
            raise IdentityError(409, str(exc)) from None
    return no_content()
