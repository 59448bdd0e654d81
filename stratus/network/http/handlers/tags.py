"""/v2.0/<collection>/<id>/tags[/<tag>] (standard-attr-tag): tags on networks, subnets,
ports, routers, floating IPs, security groups, QoS policies, subnet pools and address
scopes. The resource must exist and be the caller's (or the caller an admin)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
import webob
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s
from stratus.network.http.wsgi import Req, empty_response, json_response
from stratus.network.store import tags as store
from stratus.storage import engine as db

MAX_TAGS = 50
TAGGABLE: dict[str, tuple[str, sa.Table]] = {
    "networks": ("network", s.networks), "subnets": ("subnet", s.subnets),
    "ports": ("port", s.ports), "routers": ("router", s.routers),
    "floatingips": ("floatingip", s.floating_ips),
    "security-groups": ("security_group", s.security_groups),
    "qos/policies": ("policy", s.qos_policies), "policies": ("policy", s.qos_policies),
    "subnetpools": ("subnetpool", s.subnet_pools),
    "address-scopes": ("address_scope", s.address_scopes),
}


def _resource(req: Req, conn: Connection, collection: str) -> str:
    kind, table = TAGGABLE[collection]
    ident = req.arg("id")
    row = conn.execute(sa.select(table.c.project_id).where(table.c.id == ident)).first()
    if row is None or (req.scope is not None and row.project_id != req.scope):
        raise errors.NotFound(f"{kind} {ident} could not be found.", "NotFound")
    return ident


def handlers(collection: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(methods of .../tags, methods of .../tags/{tag}) for one collection."""

    def list_tags(req: Req) -> webob.Response:
        with db.read(req.deps.engine) as conn:
            ident = _resource(req, conn, collection)
            return json_response({"tags": store.of(conn, [ident])[ident]})

    def replace_tags(req: Req) -> webob.Response:
        body = req.body()
        given = body.get("tags") if isinstance(body, dict) else None
        if not isinstance(given, list) or len(given) > MAX_TAGS:
            raise errors.BadRequest(f"Invalid input for tags: a list of at most {MAX_TAGS} "
                                    "tags is required.", "HTTPBadRequest")
        wanted = [store.check(t) for t in given]
        with db.write(req.deps.engine) as conn:
            ident = _resource(req, conn, collection)
            store.replace(conn, ident, wanted)
            return json_response({"tags": store.of(conn, [ident])[ident]})

    def clear_tags(req: Req) -> webob.Response:
        with db.write(req.deps.engine) as conn:
            store.replace(conn, _resource(req, conn, collection), [])
        return empty_response(204)

    def check_tag(req: Req) -> webob.Response:
        with db.read(req.deps.engine) as conn:
            ident = _resource(req, conn, collection)
            if req.arg("tag") not in store.of(conn, [ident])[ident]:
                raise errors.NotFound(f"Tag {req.arg('tag')} could not be found for "
                                      f"{collection} {ident}.", "TagNotFound")
        return empty_response(204)

    def add_tag(req: Req) -> webob.Response:
        tag = store.check(req.arg("tag"))
        with db.write(req.deps.engine) as conn:
            ident = _resource(req, conn, collection)
            existing = store.of(conn, [ident])[ident]
            if tag not in existing and len(existing) >= MAX_TAGS:
                raise errors.BadRequest(f"A resource may have at most {MAX_TAGS} tags.",
                                        "HTTPBadRequest")
            store.add(conn, ident, tag)
        return empty_response(201)

    def remove_tag(req: Req) -> webob.Response:
        with db.write(req.deps.engine) as conn:
            store.remove(conn, _resource(req, conn, collection), req.arg("tag"))
        return empty_response(204)

    return ({"GET": list_tags, "PUT": replace_tags, "DELETE": clear_tags},
            {"GET": check_tag, "PUT": add_tag, "DELETE": remove_tag})


def routes() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for collection in TAGGABLE:
        many, one = handlers(collection)
        out.append((f"/{collection}/{{id}}/tags", many))
        out.append((f"/{collection}/{{id}}/tags/{{tag}}", one))
    return out
