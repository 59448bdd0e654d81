"""``/v2/images``: create, show, update (Glance's JSON patches), delete, list, tags, and
the deactivate/reactivate actions."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import sqlalchemy as sa
import webob

from stratus.image import model, patch, store
from stratus.image import schema as s
from stratus.image.http.common import Req, no_content, now, owned, respond, visible
from stratus.image.http.errors import ImageAPIError
from stratus.storage import engine as db

DEFAULT_LIMIT, MAX_LIMIT = 25, 1000
LIST_KEYS = {"limit", "marker", "sort_key", "sort_dir", "sort", "tag", "id", "size_min",
             "size_max", "member_status", "created_at", "updated_at"}
CORE_FILTERS = ("name", "status", "visibility", "owner", "disk_format", "container_format",
                "protected", "os_hidden", "size", "min_ram", "min_disk", "checksum",
                "os_hash_value")
INT_FILTERS = ("size", "min_ram", "min_disk")


def _model_errors(exc: model.ImageInputError) -> ImageAPIError:
    if isinstance(exc, model.ReadOnly):
        return ImageAPIError(403, str(exc))
    if isinstance(exc, model.PatchConflict):
        return ImageAPIError(409, str(exc))
    return ImageAPIError(400, str(exc))


def create_image(req: Req) -> webob.Response:
    req.require_write()
    body = req.json()
    if not isinstance(body, Mapping):
        raise ImageAPIError(400, "The request body must be a JSON object.")
    image_id = body.get("id") or str(uuid.uuid4())
    try:
        image_id = str(uuid.UUID(str(image_id)))
    except ValueError:
        raise ImageAPIError(400, f"Invalid image id {image_id!r}: not a UUID.") from None
    try:
        image = model.new_image(image_id, req.project, body, admin=req.admin, now=now())
    except model.ImageInputError as exc:
        raise _model_errors(exc) from None
    with db.write(req.deps.engine) as conn:
        if store.get(conn, image.id) is not None:
            raise ImageAPIError(409, f"Image with identifier {image.id} already exists!")
        store.create(conn, image)
    resp = respond(model.render(image), 201)
    resp.headers["Location"] = f"{req.webob.host_url}/v2/images/{image.id}"
    return resp


def show_image(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        return respond(model.render(visible(req, conn, req.args["id"])))


def update_image(req: Req) -> webob.Response:
    draft = patch.MEDIA_TYPES.get(req.webob.content_type or "")
    if draft is None:
        resp = respond({"code": "415 Unsupported Media Type",
                        "title": "Unsupported Media Type",
                        "message": "The request body must be a JSON patch of type "
                                   f"{' or '.join(sorted(patch.MEDIA_TYPES))}."}, 415)
        resp.headers["Accept-Patch"] = ", ".join(sorted(patch.MEDIA_TYPES))
        return resp
    try:
        changes = patch.parse(req.json(), draft)
    except model.ImageInputError as exc:
        raise _model_errors(exc) from None
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        owned(req, image)
        try:
            changed = patch.apply(image, changes, admin=req.admin, now=now())
        except model.ImageInputError as exc:
            raise _model_errors(exc) from None
        if changes:
            store.save(conn, changed)
    return respond(model.render(changed))


def delete_image(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        owned(req, image)
        if image.protected:
            raise ImageAPIError(403, f"Image {image.id} is protected and cannot be deleted.")
        store.delete(conn, image.id)
    req.deps.data_path(image.id).unlink(missing_ok=True)
    req.deps.staging_path(image.id).unlink(missing_ok=True)
    return no_content()


def _set_active(req: Req, to: str, allowed_from: str) -> webob.Response:
    """deactivate/reactivate: ``allowed_from`` -> ``to``; already ``to`` is a no-op."""
    req.require_write()
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        if not req.admin and image.owner != req.project:
            raise ImageAPIError(403, "You are not permitted to change an image you do not "
                                "own.")
        if image.status == allowed_from:
            i = s.images
            conn.execute(sa.update(i).where(i.c.id == image.id, i.c.status == allowed_from)
                         .values(status=to, updated_at=now()))
        elif image.status != to:
            verb = "deactivate" if to == "deactivated" else "reactivate"
            raise ImageAPIError(403, f"Not allowed to {verb} image in status "
                                f"'{image.status}'")
    return no_content()


def deactivate(req: Req) -> webob.Response:
    return _set_active(req, "deactivated", "active")


def reactivate(req: Req) -> webob.Response:
    return _set_active(req, "active", "deactivated")


# ---- listing --------------------------------------------------------------------------

def _bool(value: str, key: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ImageAPIError(400, f"Invalid value for {key}: {value!r} (true or false).")
    return value.lower() == "true"


def _int(value: str, key: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ImageAPIError(400, f"Invalid {key}: {value!r} is not an integer.") from None
    if not low <= number <= high:
        raise ImageAPIError(400, f"Invalid {key}: {number} is not from {low} to {high}.")
    return number


def _sort(req: Req) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, value in req.query:
        if key == "sort":
            for part in value.split(","):
                name, _, direction = part.strip().partition(":")
                pairs.append((name, direction or "desc"))
    keys = [v for k, v in req.query if k == "sort_key"]
    dirs = [v for k, v in req.query if k == "sort_dir"]
    if keys:
        if pairs:
            raise ImageAPIError(400, "Use either sort or sort_key/sort_dir, not both.")
        pairs = [(k, dirs[i] if i < len(dirs) else (dirs[0] if dirs else "desc"))
                 for i, k in enumerate(keys)]
    for name, direction in pairs:
        if name not in store.SORT_KEYS:
            raise ImageAPIError(400, f"Invalid sort key: {name}.")
        if direction not in ("asc", "desc"):
            raise ImageAPIError(400, f"Invalid sort direction: {direction}.")
    return pairs or [("created_at", "desc")]


def _query(req: Req) -> store.ListQuery:
    query = store.ListQuery(project=req.project, admin=req.admin, sort=_sort(req))
    core: dict[str, Any] = {}
    properties: dict[str, str] = {}
    tags: list[str] = []
    for key, value in req.query:
        if key == "limit":
            query.limit = _int(value, "limit", 0, 2**31 - 1)
        elif key == "marker":
            query.marker = value
        elif key == "tag":
            tags.append(value)
        elif key == "id":
            query.ids = value[3:].split(",") if value.startswith("in:") else [value]
        elif key in ("size_min", "size_max"):
            # Glance takes any integer; a negative bound is simply no bound.
            setattr(query, key, _int(value, key, -(2**63), 2**63 - 1))
        elif key == "member_status":
            if value not in (*model.MEMBER_STATUSES, "all"):
                raise ImageAPIError(400, f"Invalid status: {value}")
            query.member_status = value
        elif key == "visibility":
            if value not in (*model.VISIBILITIES, "all"):
                raise ImageAPIError(400, f"Invalid visibility value: {value}")
            query.visibility = value
        elif key in ("protected", "os_hidden"):
            core[key] = _bool(value, key)
            if key == "os_hidden":
                query.include_hidden = True
        elif key in INT_FILTERS:
            core[key] = _int(value, key, 0, 2**63 - 1)
        elif key in CORE_FILTERS:
            core[key] = value[3:] if value.startswith("eq:") else value
        elif key not in LIST_KEYS:
            properties[key] = value
    query.limit = min(query.limit if any(k == "limit" for k, _ in req.query)
                      else DEFAULT_LIMIT, MAX_LIMIT)
    query.core, query.properties, query.tags = core, properties, tags
    return query


def list_images(req: Req) -> webob.Response:
    query = _query(req)
    with db.read(req.deps.engine) as conn:
        try:
            found = store.listing(conn, query)
        except store.MarkerNotFound:
            raise ImageAPIError(400, f"Invalid marker. Image {query.marker} could not be "
                                "found.") from None
    body: dict[str, Any] = {"images": [model.render(i) for i in found],
                            "first": "/v2/images", "schema": "/v2/schemas/images"}
    kept = [(k, v) for k, v in req.query if k != "marker"]
    if found and len(found) == query.limit:
        body["next"] = "/v2/images?" + urlencode([*kept, ("marker", found[-1].id)])
    if kept:
        body["first"] += "?" + urlencode(kept)
    return respond(body)


# ---- tags ---------------------------------------------------------------------------------

def add_tag(req: Req) -> webob.Response:
    tag = req.args["tag"]
    if not tag or len(tag) > 255:
        raise ImageAPIError(400, "A tag has 1 to 255 characters.")
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        owned(req, image)
        if tag not in image.tags:
            store.save(conn, replace(image, tags=(*image.tags, tag), updated_at=now()))
    return no_content()


def delete_tag(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        owned(req, image)
        if req.args["tag"] not in image.tags:
            raise ImageAPIError(404, f"Tag {req.args['tag']} not found.")
        store.save(conn, replace(image, tags=tuple(t for t in image.tags
                                                   if t != req.args["tag"]), updated_at=now()))
    return no_content()
