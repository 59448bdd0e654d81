"""``/v2/metadefs/...``: namespaces, resource types and their associations, and the
property, object and tag definitions of a namespace.

Glance's default policy: reading needs the namespace to be public or the caller's own
(or an admin); every write is an admin's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlencode

import webob

from stratus.image.http.common import Req, no_content, now, respond
from stratus.image.http.errors import ImageAPIError
from stratus.image.metadefs import schemas
from stratus.image.metadefs import store as ms
from stratus.image.metadefs.store import Named, Namespace
from stratus.storage import engine as db

DEFAULT_LIMIT, MAX_LIMIT = 25, 1000
SORT_KEYS = ("created_at", "updated_at", "namespace", "display_name", "id")


def _when(moment: Any) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def _href(ns: str, *parts: str) -> str:
    return "/v2/metadefs/namespaces/" + "/".join(quote(p, safe=":") for p in (ns, *parts))


def _checked(body: Any, schema: dict[str, Any]) -> dict[str, Any]:
    try:
        return schemas.check(body, schema)
    except schemas.Invalid as exc:
        raise ImageAPIError(400, str(exc)) from None


def _admin(req: Req) -> None:
    if not req.admin:
        raise ImageAPIError(403, "You are not authorized to complete this action "
                            "(metadata definitions are changed by admins).")


def _namespace(req: Req, conn: Any) -> Namespace:
    found = ms.get_namespace(conn, req.args["ns"])
    if found is None or not (req.admin or found.visibility == "public" or
                             found.owner == req.project):
        raise ImageAPIError(404, f"Metadata definition namespace={req.args['ns']} was not "
                            "found.")
    return found


def _duplicate(exc: ms.Duplicate) -> ImageAPIError:
    return ImageAPIError(409, str(exc))


# ---- rendering ----------------------------------------------------------------------

def _render_association(item: Named) -> dict[str, Any]:
    body = {"name": item.name, "created_at": _when(item.created_at)}
    body.update({k: v for k, v in item.body.items() if v is not None})
    if item.updated_at:
        body["updated_at"] = _when(item.updated_at)
    return body


def _render_property(item: Named) -> dict[str, Any]:
    return {"name": item.name, **item.body}


def _render_object(ns: str, item: Named) -> dict[str, Any]:
    body: dict[str, Any] = {"name": item.name}
    body.update({k: v for k, v in item.body.items() if v is not None})
    body.update(created_at=_when(item.created_at), updated_at=_when(item.updated_at),
                schema="/v2/schemas/metadefs/object", self=_href(ns, "objects", item.name))
    return {k: v for k, v in body.items() if v is not None}


def _render_tag(item: Named) -> dict[str, Any]:
    return {k: v for k, v in {"name": item.name, "created_at": _when(item.created_at),
                              "updated_at": _when(item.updated_at)}.items() if v}


def _render_namespace(ns: Namespace, contents: dict[str, list[Named]] | None = None
                      ) -> dict[str, Any]:
    body: dict[str, Any] = {
        "namespace": ns.namespace, "display_name": ns.display_name,
        "description": ns.description, "visibility": ns.visibility,
        "protected": ns.protected, "owner": ns.owner, "created_at": _when(ns.created_at),
        "updated_at": _when(ns.updated_at), "schema": "/v2/schemas/metadefs/namespace",
        "self": _href(ns.namespace)}
    body = {k: v for k, v in body.items() if v is not None}
    for kind, found in (contents or {}).items():
        if not found:
            continue
        if kind == "associations":
            body["resource_type_associations"] = [_render_association(i) for i in found]
        elif kind == "properties":
            body["properties"] = {i.name: dict(i.body) for i in found}
        elif kind == "objects":
            body["objects"] = [{k: v for k, v in _render_object(ns.namespace, i).items()
                                if k not in ("schema", "self")} for i in found]
        else:
            body["tags"] = [{"name": i.name} for i in found]
    return body


def _contents(conn: Any, ns: Namespace) -> dict[str, list[Named]]:
    return {kind: ms.items(conn, ns, kind) for kind in ms.KINDS}


# ---- namespaces -----------------------------------------------------------------------

def _add_contents(conn: Any, ns: Namespace, body: Mapping[str, Any], when: Any) -> None:
    for assoc in body.get("resource_type_associations") or []:
        ms.ensure_resource_type(conn, assoc["name"], when)
        ms.add_item(conn, ns, "associations", assoc["name"], assoc, when)
    for name, definition in (body.get("properties") or {}).items():
        ms.add_item(conn, ns, "properties", name, definition, when)
    for obj in body.get("objects") or []:
        if not obj.get("name"):
            raise ImageAPIError(400, "Each object needs a name.")
        ms.add_item(conn, ns, "objects", obj["name"], obj, when)
    for tag in body.get("tags") or []:
        if not tag.get("name"):
            raise ImageAPIError(400, "Each tag needs a name.")
        ms.add_item(conn, ns, "tags", tag["name"], {}, when)


def create_namespace(req: Req) -> webob.Response:
    _admin(req)
    body = _checked(req.json(), schemas.NAMESPACE_SCHEMA)
    when = now()
    ns = Namespace(id=str(uuid.uuid4()), namespace=body["namespace"],
                   visibility=body.get("visibility", "private"),
                   protected=bool(body.get("protected", False)),
                   owner=body.get("owner") or req.project,
                   display_name=body.get("display_name"),
                   description=body.get("description"), created_at=when, updated_at=when)
    with db.write(req.deps.engine) as conn:
        try:
            ms.create_namespace(conn, ns)
            _add_contents(conn, ns, body, when)
        except ms.Duplicate as exc:
            raise _duplicate(exc) from None
        made = _render_namespace(ns, _contents(conn, ns))
    return respond(made, 201)


def list_namespaces(req: Req) -> webob.Response:
    limit = DEFAULT_LIMIT
    if (raw := req.param("limit")) is not None:
        if not raw.isdigit():
            raise ImageAPIError(400, "limit param must be an integer")
        limit = min(int(raw), MAX_LIMIT)
    sort_key, sort_dir = req.param("sort_key") or "created_at", req.param("sort_dir") or "desc"
    if sort_key not in SORT_KEYS or sort_dir not in ("asc", "desc"):
        raise ImageAPIError(400, f"Invalid sort: {sort_key} {sort_dir}.")
    visibility = req.param("visibility")
    if visibility not in (None, "public", "private"):
        raise ImageAPIError(400, f"Invalid visibility value: {visibility}")
    types = [t for t in (req.param("resource_types") or "").split(",") if t]
    with db.read(req.deps.engine) as conn:
        marker = None
        if (name := req.param("marker")) is not None:
            marker = ms.get_namespace(conn, name)
            if marker is None:
                raise ImageAPIError(400, f"Invalid marker: namespace {name} not found.")
        found = ms.namespaces(conn, project=req.project, admin=req.admin,
                              visibility=visibility, resource_types=types or None,
                              sort_key=sort_key, sort_dir=sort_dir, marker=marker,
                              limit=limit)
        rendered = [_render_namespace(ns, {"associations": ms.items(conn, ns, "associations")})
                    for ns in found]
    kept = [(k, v) for k, v in req.query if k != "marker"]
    body: dict[str, Any] = {"namespaces": rendered, "schema": "/v2/schemas/metadefs/namespaces",
                            "first": "/v2/metadefs/namespaces" + ("?" + urlencode(kept)
                                                                  if kept else "")}
    if found and len(found) == limit:
        body["next"] = "/v2/metadefs/namespaces?" + urlencode(
            [*kept, ("marker", found[-1].namespace)])
    return respond(body)


def show_namespace(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        return respond(_render_namespace(ns, _contents(conn, ns)))


def update_namespace(req: Req) -> webob.Response:
    _admin(req)
    body = _checked(req.json(), schemas.NAMESPACE_SCHEMA)
    with db.write(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        changed = replace(ns, **{k: body[k] for k in ("namespace", "display_name",
                                                      "description", "visibility",
                                                      "protected", "owner") if k in body},
                          updated_at=now())
        try:
            ms.save_namespace(conn, changed)
        except ms.Duplicate as exc:
            raise _duplicate(exc) from None
        return respond(_render_namespace(changed, _contents(conn, changed)))


def _unprotected(ns: Namespace) -> None:
    if ns.protected:
        raise ImageAPIError(403, f"Namespace {ns.namespace} is protected and cannot be "
                            "deleted.")


def delete_namespace(req: Req) -> webob.Response:
    _admin(req)
    with db.write(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        _unprotected(ns)
        ms.delete_namespace(conn, ns)
    return no_content()


def _delete_all(kind: str) -> Callable[[Req], webob.Response]:
    def handler(req: Req) -> webob.Response:
        _admin(req)
        with db.write(req.deps.engine) as conn:
            ns = _namespace(req, conn)
            _unprotected(ns)
            ms.delete_items(conn, ns, kind)
        return no_content()
    return handler


delete_properties, delete_objects, delete_tags = (
    _delete_all("properties"), _delete_all("objects"), _delete_all("tags"))


# ---- resource types and associations --------------------------------------------------------

def list_resource_types(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = ms.resource_types(conn)
    return respond({"resource_types": [
        {k: v for k, v in {"name": t.name, "created_at": _when(t.created_at),
                           "updated_at": _when(t.updated_at)}.items() if v} for t in found]})


def list_associations(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = ms.items(conn, _namespace(req, conn), "associations")
    return respond({"resource_type_associations": [_render_association(a) for a in found]})


def add_association(req: Req) -> webob.Response:
    _admin(req)
    body = _checked(req.json(), schemas.ASSOCIATION_SCHEMA)
    when = now()
    with db.write(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        ms.ensure_resource_type(conn, body["name"], when)
        try:
            made = ms.add_item(conn, ns, "associations", body["name"], body, when)
        except ms.Duplicate as exc:
            raise _duplicate(exc) from None
    return respond(_render_association(made), 201)


def delete_association(req: Req) -> webob.Response:
    _admin(req)
    with db.write(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        if not ms.delete_item(conn, ns, "associations", req.args["name"]):
            raise ImageAPIError(404, f"Resource type association {req.args['name']} not "
                                f"found in namespace {ns.namespace}.")
    return no_content()


# ---- properties, objects, tags ---------------------------------------------------------------

def _one(req: Req, conn: Any, ns: Namespace, kind: str) -> Named:
    found = ms.item(conn, ns, kind, req.args["name"])
    if found is None:
        raise ImageAPIError(404, f"Metadata definition {kind[:-1]} {req.args['name']} was "
                            f"not found in namespace {ns.namespace}.")
    return found


def list_properties(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = ms.items(conn, _namespace(req, conn), "properties")
    return respond({"properties": {p.name: dict(p.body) for p in found}})


def list_objects(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        found = ms.items(conn, ns, "objects")
    return respond({"objects": [_render_object(ns.namespace, o) for o in found],
                    "schema": "/v2/schemas/metadefs/objects"})


def list_tags(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = ms.items(conn, _namespace(req, conn), "tags")
    return respond({"tags": [_render_tag(t) for t in found]})


def _render(kind: str, ns: Namespace, item: Named) -> dict[str, Any]:
    if kind == "properties":
        return _render_property(item)
    if kind == "objects":
        return _render_object(ns.namespace, item)
    return _render_tag(item)


SCHEMA_OF = {"properties": schemas.PROPERTY_SCHEMA, "objects": schemas.OBJECT_SCHEMA,
             "tags": schemas.TAG_SCHEMA}


def _creator(kind: str) -> Callable[[Req], webob.Response]:
    def handler(req: Req) -> webob.Response:
        _admin(req)
        body = _checked(req.json() if kind != "tags" else {"name": req.args["name"]},
                        SCHEMA_OF[kind])
        with db.write(req.deps.engine) as conn:
            ns = _namespace(req, conn)
            try:
                made = ms.add_item(conn, ns, kind, body["name"], body, now())
            except ms.Duplicate as exc:
                raise _duplicate(exc) from None
        return respond(_render(kind, ns, made), 201)
    return handler


def _shower(kind: str) -> Callable[[Req], webob.Response]:
    def handler(req: Req) -> webob.Response:
        with db.read(req.deps.engine) as conn:
            ns = _namespace(req, conn)
            return respond(_render(kind, ns, _one(req, conn, ns, kind)))
    return handler


def _updater(kind: str) -> Callable[[Req], webob.Response]:
    def handler(req: Req) -> webob.Response:
        _admin(req)
        body = _checked(req.json(), SCHEMA_OF[kind])
        with db.write(req.deps.engine) as conn:
            ns = _namespace(req, conn)
            old = _one(req, conn, ns, kind)
            try:
                changed = ms.replace_item(conn, ns, kind, old, body["name"], body, now())
            except ms.Duplicate as exc:
                raise _duplicate(exc) from None
        return respond(_render(kind, ns, changed))
    return handler


def _deleter(kind: str) -> Callable[[Req], webob.Response]:
    def handler(req: Req) -> webob.Response:
        _admin(req)
        with db.write(req.deps.engine) as conn:
            ns = _namespace(req, conn)
            _one(req, conn, ns, kind)
            ms.delete_item(conn, ns, kind, req.args["name"])
        return no_content()
    return handler


create_property, show_property, update_property, delete_property = (
    _creator("properties"), _shower("properties"), _updater("properties"),
    _deleter("properties"))
create_object, show_object, update_object, delete_object = (
    _creator("objects"), _shower("objects"), _updater("objects"), _deleter("objects"))
create_tag, show_tag, update_tag, delete_tag = (
    _creator("tags"), _shower("tags"), _updater("tags"), _deleter("tags"))


def create_tags(req: Req) -> webob.Response:
    """``POST .../tags``: the namespace's tags become these (``X-Openstack-Append: true``
    adds them to those it has)."""
    _admin(req)
    body = _checked(req.json(), schemas.TAGS_BODY_SCHEMA)
    names = [t["name"] for t in body.get("tags", [])]
    if len(set(names)) != len(names):
        raise ImageAPIError(409, "Duplicate tag names in the request.")
    append = (req.webob.headers.get("X-Openstack-Append") or "").lower() == "true"
    when = now()
    with db.write(req.deps.engine) as conn:
        ns = _namespace(req, conn)
        if not append:
            ms.delete_items(conn, ns, "tags")
        try:
            made = [ms.add_item(conn, ns, "tags", name, {}, when) for name in names]
        except ms.Duplicate as exc:
            raise _duplicate(exc) from None
    return respond({"tags": [_render_tag(t) for t in made]}, 201)
