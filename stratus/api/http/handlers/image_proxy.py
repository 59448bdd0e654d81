"""/images: the compute API's proxy to the image service (until 2.35; image metadata
until 2.38), as Nova serves it: Glance's images in the v2.0 shapes (``minRam``,
``metadata``, ``status`` ACTIVE/SAVING..., ``progress``, ``OS-EXT-IMG-SIZE:size``, a
``server`` link for a snapshot), asked with the caller's identity so the image
service's own visibility rules apply.

Filters as Nova passes them on: ``name``, ``status``, ``changes-since``, ``server``,
``type``, ``minRam``, ``minDisk``, ``property-*``; ``limit``/``marker``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

import webob

from stratus.api.http.errors import HTTPError
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.store.errors import BadRequest, Forbidden, NotFound, ServiceUnavailable
from stratus.image.client import CORE, Caller, ImageClientError, ImageWriter

_NOT_FOUND = "The resource could not be found."
_STATUS = {"active": "ACTIVE", "queued": "SAVING", "saving": "SAVING", "deleted": "DELETED",
           "pending_delete": "DELETED", "killed": "ERROR"}
_PROGRESS = {"queued": 25, "saving": 50, "active": 100}
# Nova's filters and the Glance field each names.
_FILTERS = {"name": "name", "status": "status", "server": "instance_uuid",
            "type": "image_type"}
MAX_METADATA_ITEMS = 128     # Nova's metadata_items quota, which image metadata obeys


def _writer(req: Req) -> ImageWriter:
    if req.api.images is None:
        raise ServiceUnavailable("This cloud's compute API has no image service configured.")
    return req.api.images


def _caller(req: Req) -> Caller:
    return Caller(req.ctx.user_id or "", req.project_id, tuple(req.ctx.roles))


def _check(req: Req, last: str) -> None:
    if not req.want.supports(last):
        return
    raise HTTPError(404, _NOT_FOUND)


def _failed(exc: ImageClientError) -> Exception:
    if exc.status == 404:
        return NotFound("Image not found.")
    if exc.status == 403:
        return Forbidden("You are not allowed to change the image.")
    if exc.status == 400:
        return BadRequest(exc.message)
    return ServiceUnavailable(f"The image service answered {exc.status}: {exc.message}")


def _get(req: Req, image_id: str) -> dict[str, Any]:
    try:
        return _writer(req).get(image_id, _caller(req))
    except ImageClientError as exc:
        raise _failed(exc) from None


def properties(image: dict[str, Any]) -> dict[str, Any]:
    """An image's own properties: not Glance's attributes, nor what Glance alone writes
    (its stores, the ``os_glance_*`` namespace), which no metadata call may change."""
    return {k: v for k, v in image.items()
            if k not in CORE and k != "stores" and not k.startswith("os_glance")}


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def _links(req: Req, image_id: str) -> list[dict[str, str]]:
    glance = _writer(req).base_url
    return [*req.link(f"/images/{image_id}"),
            {"rel": "alternate", "type": "application/vnd.openstack.image",
             "href": f"{glance}/images/{image_id}"}]


def _brief(req: Req, image: dict[str, Any]) -> dict[str, Any]:
    return {"id": image["id"], "name": image.get("name"), "links": _links(req, image["id"])}


def _detail(req: Req, image: dict[str, Any]) -> dict[str, Any]:
    props = properties(image)
    created, updated = _when(image.get("created_at")), _when(image.get("updated_at"))
    body: dict[str, Any] = {
        **_brief(req, image), "minRam": int(image.get("min_ram") or 0),
        "minDisk": int(image.get("min_disk") or 0), "metadata": props,
        "created": created.isoformat() + "Z" if created else None,
        "updated": updated.isoformat() + "Z" if updated else None,
        "status": _STATUS.get(image.get("status", ""), "UNKNOWN"),
        "progress": _PROGRESS.get(image.get("status", ""), 0),
        "OS-EXT-IMG-SIZE:size": image.get("size")}
    server = props.get("instance_uuid")
    if server is not None:
        body["server"] = {"id": server, "links": req.link(f"/servers/{server}")}
    disk_config = props.get("auto_disk_config")
    if disk_config is not None:
        body["OS-DCF:diskConfig"] = "AUTO" if str(disk_config).strip().lower() in (
            "1", "true", "yes", "on", "t", "y") else "MANUAL"
    return body


def _all_images(req: Req) -> list[dict[str, Any]]:
    """Every image the caller may see that matches the filters, oldest first as Glance
    lists them (newest first), following Glance's pages."""
    params: list[tuple[str, str]] = []
    for name, field in _FILTERS.items():
        value = req.query(name)
        if value is not None:
            if name == "server":
                value = value.rstrip("/").rsplit("/", 1)[-1]
            params.append((field, value.lower() if name == "status" else value))
    params += [(k[len("property-"):], v) for k, v in req.query_pairs
               if k.startswith("property-")]
    found: list[dict[str, Any]] = []
    marker: str | None = None
    try:
        while True:
            page = _writer(req).listed([*params, ("limit", "1000"),
                                        *([("marker", marker)] if marker else [])],
                                       _caller(req))
            found.extend(page["images"])
            if "next" not in page or not page["images"]:
                break
            marker = page["images"][-1]["id"]
    except ImageClientError as exc:
        raise _failed(exc) from None
    return [i for i in found if _matches(req, i)]


def _matches(req: Req, image: dict[str, Any]) -> bool:
    since = req.query("changes-since")
    if since is not None:
        try:
            when = dt.datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError:
            raise BadRequest(f"Invalid changes-since value {since!r}.") from None
        if when.tzinfo is not None:
            when = when.astimezone(dt.UTC).replace(tzinfo=None)
        updated = _when(image.get("updated_at"))
        if updated is None or updated < when:
            return False
    for name, field in (("minRam", "min_ram"), ("minDisk", "min_disk")):
        raw = req.query(name)
        if raw is not None:
            try:
                wanted = int(raw)
            except ValueError:
                raise BadRequest(f"Invalid {name} filter [{raw}]") from None
            if int(image.get(field) or 0) < wanted:
                return False
    return True


def _page(req: Req, images: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    limit = req.query_int("limit")
    limit = req.api.max_limit if not limit else min(limit, req.api.max_limit)
    marker = req.query("marker")
    if marker is not None:
        ids = [i["id"] for i in images]
        if marker not in ids:
            raise BadRequest(f"marker [{marker}] not found")
        images = images[ids.index(marker) + 1:]
    return images[:limit], limit


def _listed(req: Req, detail: bool) -> webob.Response:
    _check(req, "no_proxy_apis")
    images, limit = _page(req, _all_images(req))
    render = _detail if detail else _brief
    body: dict[str, Any] = {"images": [render(req, i) for i in images]}
    if images and len(images) == limit:
        pairs = [(k, v) for k, v in req.query_pairs if k != "marker"]
        pairs.append(("marker", images[-1]["id"]))
        path = "/images/detail" if detail else "/images"
        body["images_links"] = [{"rel": "next", "href": f"{req.webob.host_url}"
                                 f"{req.webob.script_name}/v2.1{path}?{urlencode(pairs)}"}]
    return json_response(body)


def list_images(req: Req) -> webob.Response:
    return _listed(req, detail=False)


def list_images_detail(req: Req) -> webob.Response:
    return _listed(req, detail=True)


def show_image(req: Req) -> webob.Response:
    _check(req, "no_proxy_apis")
    return json_response({"image": _detail(req, _get(req, req.arg("image_id")))})


def delete_image(req: Req) -> webob.Response:
    _check(req, "no_proxy_apis")
    try:
        _writer(req).delete(req.arg("image_id"), _caller(req))
    except ImageClientError as exc:
        if exc.status == 403:
            raise Forbidden("You are not allowed to delete the image.") from None
        raise _failed(exc) from None
    return empty_response(204)


# ---- image metadata (until 2.38) -----------------------------------------------------

# Nova's parameter_types.metadata.
_META = {"type": "object",
         "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string",
                                                             "maxLength": 255}},
         "additionalProperties": False}
METADATA_BODY = {"type": "object", "properties": {"metadata": _META},
                 "required": ["metadata"], "additionalProperties": False}
META_BODY = {"type": "object", "properties": {"meta": {**_META, "minProperties": 1,
                                                        "maxProperties": 1}},
             "required": ["meta"], "additionalProperties": False}


def _metadata_image(req: Req) -> dict[str, Any]:
    _check(req, "no_image_metadata_limit")
    return _get(req, req.arg("image_id"))


def _save(req: Req, image: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """Make the image's properties ``wanted`` (Nova's purge_props update)."""
    if len(wanted) > MAX_METADATA_ITEMS:
        raise Forbidden("Quota exceeded for metadata_items: Requested "
                        f"{len(wanted)}, but already used 0 of {MAX_METADATA_ITEMS} "
                        "metadata_items")
    current = properties(image)
    changes = {k: v for k, v in wanted.items() if current.get(k) != v}
    removed = tuple(k for k in current if k not in wanted)
    try:
        saved = _writer(req).update(image["id"], changes, removed, _caller(req))
    except ImageClientError as exc:
        raise _failed(exc) from None
    return properties(saved)


def list_metadata(req: Req) -> webob.Response:
    return json_response({"metadata": properties(_metadata_image(req))})


def show_metadata_item(req: Req) -> webob.Response:
    props = properties(_metadata_image(req))
    key = req.arg("key")
    if key not in props:
        raise NotFound(_NOT_FOUND)
    return json_response({"meta": {key: props[key]}})


def update_metadata(req: Req) -> webob.Response:
    """POST: merge these keys into the metadata."""
    image = _metadata_image(req)
    body = req.body(METADATA_BODY)
    return json_response({"metadata": _save(req, image, {**properties(image),
                                                         **body["metadata"]})})


def replace_metadata(req: Req) -> webob.Response:
    """PUT: the metadata becomes exactly this."""
    image = _metadata_image(req)
    body = req.body(METADATA_BODY)
    _save(req, image, dict(body["metadata"]))
    return json_response({"metadata": body["metadata"]})


def set_metadata_item(req: Req) -> webob.Response:
    image = _metadata_image(req)
    meta = req.body(META_BODY)["meta"]
    key = req.arg("key")
    if key not in meta:
        raise BadRequest("Request body and URI mismatch")
    _save(req, image, {**properties(image), key: meta[key]})
    return json_response({"meta": meta})


def delete_metadata_item(req: Req) -> webob.Response:
    image = _metadata_image(req)
    props = properties(image)
    key = req.arg("key")
    if key not in props:
        raise NotFound("Invalid metadata key")
    del props[key]
    _save(req, image, props)
    return empty_response(204)
