"""The image API's handlers and route table (paths after ``/v2``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import sqlalchemy as sa
import webob

from stratus.image import model, store
from stratus.image import schema as s
from stratus.image.http.errors import ImageAPIError
from stratus.placement.http.wsgi import Context
from stratus.storage import engine as db
from stratus.web.inputs import InputError, decode_json

if TYPE_CHECKING:
    from stratus.image.http.app import ImageDeps

PATCH_TYPE = "application/openstack-images-v2.1-json-patch"
DEFAULT_LIMIT, MAX_LIMIT = 25, 1000
CHUNK = 65_536
LIST_KEYS = {"limit", "marker", "sort_key", "sort_dir", "sort", "tag", "id", "size_min",
             "size_max", "member_status", "created_at", "updated_at"}
CORE_FILTERS = ("name", "status", "visibility", "owner", "disk_format", "container_format",
                "protected", "os_hidden")


@dataclass
class Req:
    webob: webob.Request
    deps: ImageDeps
    ctx: Context
    query: list[tuple[str, str]]
    args: dict[str, str] = field(default_factory=dict)

    @property
    def admin(self) -> bool:
        return "admin" in {r.lower() for r in self.ctx.roles}

    @property
    def project(self) -> str | None:
        return self.ctx.project_id or self.ctx.user_id

    def json(self) -> Any:
        try:
            return decode_json(self.webob.body or b"")
        except InputError as exc:
            raise ImageAPIError(400, f"Malformed request body: {exc}") from None


Handler = Callable[[Req], webob.Response]


def respond(body: Any, status: int = 200, content_type: str = "application/json"
            ) -> webob.Response:
    return webob.Response(status=status, body=json.dumps(body).encode(),
                          content_type=content_type, charset=None)


def no_content() -> webob.Response:
    resp = webob.Response(status=204, content_type=None)
    resp.content_length = 0
    return resp


def now() -> dt.datetime:
    # Kept to the microsecond where the database keeps it (shown to the second): images
    # made in the same second still sort by age (a backup rotation deletes the oldest).
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def versions(request: webob.Request) -> webob.Response:
    base = request.host_url
    values = [{"id": f"v2.{minor}", "status": "CURRENT" if minor == 16 else "SUPPORTED",
               "links": [{"rel": "self", "href": f"{base}/v2/"}]}
              for minor in range(16, -1, -1)]
    return respond({"versions": values}, 300)


# ---- images -------------------------------------------------------------------------------

def _visible(req: Req, conn: Any, image_id: str) -> model.Image:
    found = store.get(conn, image_id)
    if found is None or not model.visible_to(found, req.project, req.admin):
        raise ImageAPIError(404, f"No image found with ID {image_id}")
    return found


def _owned(req: Req, image: model.Image) -> None:
    if not req.admin and image.owner != req.project:
        raise ImageAPIError(403, "You are not permitted to modify an image you do not own.")


def create_image(req: Req) -> webob.Response:
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
    except model.ReadOnly as exc:
        raise ImageAPIError(403, str(exc)) from None
    except model.ImageInputError as exc:
        raise ImageAPIError(400, str(exc)) from None
    with db.write(req.deps.engine) as conn:
        if store.get(conn, image.id) is not None:
            raise ImageAPIError(409, f"Image with identifier {image.id} already exists!")
        store.create(conn, image)
    resp = respond(model.render(image), 201)
    resp.headers["Location"] = f"{req.webob.host_url}/v2/images/{image.id}"
    return resp


def show_image(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        return respond(model.render(_visible(req, conn, req.args["id"])))


def update_image(req: Req) -> webob.Response:
    if (req.webob.content_type or "") != PATCH_TYPE:
        raise ImageAPIError(415, f"Unsupported Content-Type; use {PATCH_TYPE}.")
    patch = req.json()
    with db.write(req.deps.engine) as conn:
        image = _visible(req, conn, req.args["id"])
        _owned(req, image)
        try:
            changed = model.patched(image, patch, admin=req.admin, now=now())
        except model.ReadOnly as exc:
            raise ImageAPIError(403, str(exc)) from None
        except model.PatchConflict as exc:
            raise ImageAPIError(409, str(exc)) from None
        except model.ImageInputError as exc:
            raise ImageAPIError(400, str(exc)) from None
        store.save(conn, changed)
    return respond(model.render(changed))


def delete_image(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        image = _visible(req, conn, req.args["id"])
        _owned(req, image)
        if image.protected:
            raise ImageAPIError(403, f"Image {image.id} is protected and cannot be deleted.")
        store.delete(conn, image.id)
    _data_path(req, image.id).unlink(missing_ok=True)
    return no_content()


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


def list_images(req: Req) -> webob.Response:
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
            setattr(query, key, _int(value, key, 0, 2**63 - 1))
        elif key in ("protected", "os_hidden"):
            core[key] = _bool(value, key)
            if key == "os_hidden":
                query.include_hidden = True
        elif key in CORE_FILTERS:
            if key == "visibility" and value == "all":
                query.all_visibilities = True   # community ones too
                continue
            core[key] = value[3:] if value.startswith("eq:") else value
        elif key not in LIST_KEYS:
            properties[key] = value
    query.limit = min(query.limit if any(k == "limit" for k, _ in req.query)
                      else DEFAULT_LIMIT, MAX_LIMIT)
    query.core, query.properties, query.tags = core, properties, tags
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


def add_tag(req: Req) -> webob.Response:
    tag = req.args["tag"]
    if len(tag) > 255:
        raise ImageAPIError(400, "A tag has at most 255 characters.")
    with db.write(req.deps.engine) as conn:
        image = _visible(req, conn, req.args["id"])
        _owned(req, image)
        if tag not in image.tags:
            store.save(conn, replace(image, tags=(*image.tags, tag), updated_at=now()))
    return no_content()


def delete_tag(req: Req) -> webob.Response:
    with db.write(req.deps.engine) as conn:
        image = _visible(req, conn, req.args["id"])
        _owned(req, image)
        if req.args["tag"] not in image.tags:
            raise ImageAPIError(404, f"Tag {req.args['tag']} not found.")
        store.save(conn, replace(image, tags=tuple(t for t in image.tags
                                                   if t != req.args["tag"]), updated_at=now()))
    return no_content()


# ---- data -----------------------------------------------------------------------------------

def _data_path(req: Req, image_id: str) -> Any:
    return req.deps.store_dir / image_id


def _set_status(req: Req, image_id: str, expected: str, status: str, **values: Any) -> bool:
    t = s.images
    with db.write(req.deps.engine) as conn:
        return bool(conn.execute(sa.update(t).where(t.c.id == image_id, t.c.status == expected)
                                 .values(status=status, updated_at=now(), **values)).rowcount)


def upload(req: Req) -> webob.Response:
    if (req.webob.content_type or "application/octet-stream") != "application/octet-stream":
        raise ImageAPIError(415, "Upload image data as application/octet-stream.")
    with db.read(req.deps.engine) as conn:
        image = _visible(req, conn, req.args["id"])
    _owned(req, image)
    if not _set_status(req, image.id, "queued", "saving"):
        raise ImageAPIError(409, f"Image status transition from {image.status} to saving is "
                            "not allowed (data can be uploaded once, to a queued image).")
    req.deps.store_dir.mkdir(parents=True, exist_ok=True)
    target = _data_path(req, image.id)
    partial = target.with_name(target.name + ".part")
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    try:
        with open(partial, "wb") as out:
            for chunk in _body_chunks(req):
                size += len(chunk)
                if size > req.deps.max_image_size:
                    raise ImageAPIError(413, "Image data exceeds the limit of "
                                        f"{req.deps.max_image_size} bytes.")
                md5.update(chunk)
                sha512.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        _set_status(req, image.id, "saving", "queued")
        raise
    _set_status(req, image.id, "saving", "active", size=size, checksum=md5.hexdigest(),
                os_hash_algo="sha512", os_hash_value=sha512.hexdigest())
    return no_content()


def _body_chunks(req: Req) -> Iterator[bytes]:
    stream = req.webob.body_file
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            return
        yield chunk


def download(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        image = _visible(req, conn, req.args["id"])
    path = _data_path(req, image.id)
    if image.status != "active" or not path.exists():
        return no_content()
    resp = webob.Response(status=200, content_type="application/octet-stream")
    resp.app_iter = _file_chunks(path)
    resp.content_length = path.stat().st_size
    if image.checksum:
        resp.headers["Content-MD5"] = image.checksum
    return resp


def _file_chunks(path: Any) -> Iterator[bytes]:
    with open(path, "rb") as data:
        while chunk := data.read(CHUNK):
            yield chunk


# ---- schemas ----------------------------------------------------------------------------------

def _image_schema() -> dict[str, Any]:
    string = {"type": ["null", "string"], "maxLength": 255}
    return {
        "name": "image", "additionalProperties": {"type": "string"},
        "properties": {
            "id": {"type": "string", "pattern": "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-"
                   "([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$"},
            "name": string,
            "status": {"type": "string", "readOnly": True, "enum": [
                "queued", "saving", "active", "killed", "deleted", "uploading",
                "importing", "pending_delete", "deactivated"]},
            "visibility": {"type": "string", "enum": list(model.VISIBILITIES)},
            "protected": {"type": "boolean"}, "os_hidden": {"type": "boolean"},
            "checksum": {**string, "readOnly": True},
            "os_hash_algo": {**string, "readOnly": True},
            "os_hash_value": {**string, "readOnly": True},
            "owner": string,
            "size": {"type": ["null", "integer"], "readOnly": True},
            "virtual_size": {"type": ["null", "integer"], "readOnly": True},
            "container_format": {"type": ["null", "string"],
                                 "enum": [None, *model.CONTAINER_FORMATS]},
            "disk_format": {"type": ["null", "string"], "enum": [None, *model.DISK_FORMATS]},
            "created_at": {"type": "string", "readOnly": True},
            "updated_at": {"type": "string", "readOnly": True},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 255}},
            "min_ram": {"type": "integer"}, "min_disk": {"type": "integer"},
            "self": {"type": "string", "readOnly": True},
            "file": {"type": "string", "readOnly": True},
            "schema": {"type": "string", "readOnly": True},
            "os_type": {"type": "string", "description": "The operating system installed "
                        "on the image (linux, windows)."},
            "hw_architecture": {"type": "string", "description": "The CPU architecture the "
                                "image needs (x86_64, aarch64, ...)."},
            "img_hv_type": {"type": "string", "description": "The hypervisor type the "
                            "image needs (kvm, qemu, ...)."},
        },
        "links": [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
                  {"rel": "describedby", "href": "{schema}"}],
    }


def image_schema(req: Req) -> webob.Response:
    return respond(_image_schema())


def images_schema(req: Req) -> webob.Response:
    return respond({"name": "images", "properties": {
        "images": {"type": "array", "items": _image_schema()},
        "schema": {"type": "string"}, "first": {"type": "string"},
        "next": {"type": "string"}},
        "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                  {"rel": "describedby", "href": "{schema}"}]})


ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/images", {"GET": list_images, "POST": create_image}),
    ("/images/{id}", {"GET": show_image, "PATCH": update_image, "DELETE": delete_image}),
    ("/images/{id}/file", {"PUT": upload, "GET": download}),
    ("/images/{id}/tags/{tag}", {"PUT": add_tag, "DELETE": delete_tag}),
    ("/schemas/image", {"GET": image_schema}),
    ("/schemas/images", {"GET": images_schema}),
]
