"""/resource_classes and /resource_classes/{name} (1.2+; PUT creates without a body from 1.7)."""

from __future__ import annotations

import webob

from stratus.placement import errors
from stratus.placement.http.schemas import resource_class as schema
from stratus.placement.http.wsgi import Req, empty_response, json_response, latest, validate
from stratus.placement.store import resource_classes as store
from stratus.storage import engine as db


def _render(req: Req, rc: store.ResourceClass) -> dict[str, object]:
    return {
        "name": rc.name,
        "links": [{"rel": "self", "href": req.url(f"/resource_classes/{rc.name}")}],
    }


def list_resource_classes(req: Req) -> webob.Response:
    req.require("custom_resource_classes")
    req.authorize("placement:resource_classes:list")
    with db.read(req.app.engine) as conn:
        rcs = store.list_all(conn)
    body = {"resource_classes": [_render(req, rc) for rc in rcs]}
    stamp = latest(*(rc.updated_at or rc.created_at for rc in rcs))
    return json_response(req, body, last_modified=stamp)


def get_resource_class(req: Req) -> webob.Response:
    req.require("custom_resource_classes")
    req.authorize("placement:resource_classes:show")
    with db.read(req.app.engine) as conn:
        rc = store.get(conn, req.arg("name"))
    return json_response(req, _render(req, rc), last_modified=rc.updated_at or rc.created_at)


def create_resource_class(req: Req) -> webob.Response:
    req.require("custom_resource_classes")
    req.authorize("placement:resource_classes:create")
    data = req.json_body(schema.POST_V1_2)
    with db.write(req.app.engine) as conn:
        rc = store.create(conn, data["name"])
    resp = empty_response(201)
    resp.location = req.url(f"/resource_classes/{rc.name}")
    return resp


def update_resource_class(req: Req) -> webob.Response:
    req.require("custom_resource_classes")
    req.authorize("placement:resource_classes:update")
    name = req.arg("name")
    if req.want.supports("resource_class_put_create"):
        # 1.7+: PUT is an idempotent "make sure this custom class exists"; the name in
        # the URL is held to the same schema as a POST body (pattern, length).
        validate({"name": name}, schema.PUT_V1_2)
        with db.read(req.app.engine) as conn:   # usually there: no writer's turn needed
            created = not store.exists(conn, name)
        if created:
            try:
                with db.write(req.app.engine) as conn:
                    created = not store.exists(conn, name)
                    if created:
                        store.create(conn, name)
            except errors.Conflict:
                # A concurrent PUT created it between our check and our insert (PostgreSQL
                # and MariaDB do not serialise the two): it exists, which is what was asked.
                created = False
        resp = empty_response(201 if created else 204)
        resp.location = req.url(f"/resource_classes/{name}")
        return resp
    data = req.json_body(schema.PUT_V1_2)
    with db.write(req.app.engine) as conn:
        rc = store.rename(conn, name, data["name"])
    return json_response(req, _render(req, rc), last_modified=rc.updated_at)


def delete_resource_class(req: Req) -> webob.Response:
    req.require("custom_resource_classes")
    req.authorize("placement:resource_classes:delete")
    with db.write(req.app.engine) as conn:
        store.delete(conn, req.arg("name"))
    return empty_response(204)
