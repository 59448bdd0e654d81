"""The compute API's image proxy (Nova's ``/images`` up to 2.35, ``/images/{id}/metadata``
up to 2.38): images of the image service shown in Nova's shapes, read and changed in
the caller's name (the image service's own visibility and ownership rules apply).
From 2.36 (2.39 for the metadata) these are 404, as in Nova: clients use the image
API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import webob

from stratus.api.http import lifecycle_schemas as schemas
from stratus.api.http.errors import HTTPError
from stratus.api.http.wsgi import Req, empty_response, json_response
from stratus.api.ops import server_update
from stratus.api.store.errors import BadRequest, Forbidden, NotFound, ServiceUnavailable
from stratus.image.client import Caller, ImageClientError, ImageWriter, is_property

STATUS = {"active": "ACTIVE", "queued": "SAVING", "saving": "SAVING",
          "deleted": "DELETED", "pending_delete": "DELETED", "killed": "ERROR"}
PROGRESS = {"queued": 25, "saving": 50, "active": 100}
# Nova's filters -> the image API's (``server`` and ``type`` are properties).
FILTERS = {"name": "name", "status": "status", "server": "instance_uuid",
           "type": "image_type"}


def _writer(req: Req) -> tuple[ImageWriter, Caller]:
    if req.api.images is None:
        raise ServiceUnavailable("This cloud has no image service ([glance] api_servers).")
    return req.api.images, Caller(req.ctx.user_id or "", req.project_id,
                                  tuple(req.ctx.roles))


def _call(what: Callable[[], Any], image_id: str | None = None) -> Any:
    try:
        return what()
    except ImageClientError as exc:
        if exc.status == 404:
            raise NotFound("Image not found.") from None
        if exc.status == 403:
            raise Forbidden("You are not allowed to delete the image." if image_id
                            else exc.message) from None
        if exc.status in (400, 409):
            raise BadRequest(exc.message) from None
        raise ServiceUnavailable(f"The image service did not answer: {exc}") from None


def _proxied(req: Req, last: str = "no_proxy_apis") -> None:
    if req.want.supports(last):
        raise HTTPError(404, "The resource could not be found.")


def properties(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if is_property(k)}


def _links(req: Req, image_id: str) -> list[dict[str, str]]:
    glance = req.api.images.base_url if req.api.images is not None else ""
    return [*req.link(f"/images/{image_id}"),
            {"rel": "alternate", "type": "application/vnd.openstack.image",
             "href": f"{glance}/images/{image_id}"}]


def basic(req: Req, doc: dict[str, Any]) -> dict[str, Any]:
    return {"id": doc["id"], "name": doc.get("name"), "links": _links(req, doc["id"])}


def detailed(req: Req, doc: dict[str, Any]) -> dict[str, Any]:
    props = properties(doc)
    body: dict[str, Any] = {
        "id": doc["id"], "name": doc.get("name"), "minRam": int(doc.get("min_ram") or 0),
        "minDisk": int(doc.get("min_disk") or 0), "metadata": props,
        "created": doc.get("created_at"), "updated": doc.get("updated_at"),
        "status": STATUS.get(str(doc.get("status")), "UNKNOWN"),
        "progress": PROGRESS.get(str(doc.get("status")), 0),
        "OS-EXT-IMG-SIZE:size": doc.get("size"), "links": _links(req, doc["id"])}
    server = props.get("instance_uuid")
    if server is not None:
        body["server"] = {"id": server, "links": req.link(f"/servers/{server}")}
    return body


def _listed(req: Req) -> list[dict[str, Any]]:
    writer, caller = _writer(req)
    params: list[tuple[str, str]] = []
    for key, value in req.query_pairs:
        if key in FILTERS:
            params.append((FILTERS[key], value.rsplit("/", 1)[-1] if key == "server"
                           else value.lower() if key == "status" else value))
        elif key.startswith("property-"):
            params.append((key[len("property-"):], value))
        elif key in ("limit", "marker"):
            params.append((key, value))
    limit = min(int(req.query("limit") or req.api.max_limit), req.api.max_limit)
    if not any(k == "limit" for k, _ in params):
        params.append(("limit", str(limit)))
    found = _call(lambda: writer.listed(params, caller))["images"]
    minimums = {"min_ram": req.query("minRam"), "min_disk": req.query("minDisk")}
    for key, wanted in minimums.items():
        if wanted is not None:
            try:
                floor = int(wanted)
            except ValueError:
                raise BadRequest(f"Invalid {key}: {wanted!r} is not an integer.") from None
            found = [d for d in found if int(d.get(key) or 0) >= floor]
    since = req.query("changes-since")
    if since is not None:
        found = [d for d in found if str(d.get("updated_at") or "") >= since]
    return list(found)


def _page_links(req: Req, found: list[dict[str, Any]], collection: str
                ) -> dict[str, Any]:
    limit = min(int(req.query("limit") or req.api.max_limit), req.api.max_limit)
    if not found or len(found) != limit:
        return {}
    pairs = sorted((k, v) for k, v in req.query_pairs if k != "marker")
    pairs.append(("marker", found[-1]["id"]))
    url = req.link(f"/{collection}")[0]["href"]
    return {"images_links": [{"rel": "next", "href": f"{url}?{urlencode(pairs)}"}]}


def list_images(req: Req) -> webob.Response:
    _proxied(req)
    req.authorize("os_compute_api:images")
    found = _listed(req)
    return json_response({"images": [basic(req, d) for d in found],
                          **_page_links(req, found, "images")})


def list_images_detail(req: Req) -> webob.Response:
    _proxied(req)
    req.authorize("os_compute_api:images")
    found = _listed(req)
    return json_response({"images": [detailed(req, d) for d in found],
                          **_page_links(req, found, "images/detail")})


def _image(req: Req) -> dict[str, Any]:
    writer, caller = _writer(req)
    image_id = req.arg("image_id")
    return dict(_call(lambda: writer.get(image_id, caller)))


def show_image(req: Req) -> webob.Response:
    _proxied(req)
    req.authorize("os_compute_api:images")
    return json_response({"image": detailed(req, _image(req))})


def no_image(req: Req) -> webob.Response:
    """``DELETE /images/`` (no id): Nova's router finds no image (404, not 405)."""
    _proxied(req)
    raise NotFound("Image not found.")


def delete_image(req: Req) -> webob.Response:
    _proxied(req)
    req.authorize("os_compute_api:images")
    writer, caller = _writer(req)
    image_id = req.arg("image_id")
    _call(lambda: writer.delete(image_id, caller), image_id)
    return empty_response(204)


# ---- /images/{id}/metadata (up to 2.38) ---------------------------------------------------


def _set_properties(req: Req, doc: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Make the image's properties exactly ``wanted`` (Nova's purge_props update),
    within the caller's metadata_items quota."""
    server_update.check_metadata_quota(req.api, req.project_id, wanted)
    writer, caller = _writer(req)
    have = properties(doc)
    changes = {k: v for k, v in wanted.items() if have.get(k) != v}
    removed = tuple(k for k in have if k not in wanted)
    if changes or removed:
        _call(lambda: writer.update(doc["id"], changes, removed, caller))


def list_image_metadata(req: Req) -> webob.Response:
    _proxied(req, "no_image_metadata_limit")
    req.authorize("os_compute_api:image-metadata")
    return json_response({"metadata": properties(_image(req))})


def show_image_metadata(req: Req) -> webob.Response:
    _proxied(req, "no_image_metadata_limit")
    req.authorize("os_compute_api:image-metadata")
    props, key = properties(_image(req)), req.arg("key")
    if key not in props:
        raise NotFound("The resource could not be found.")
    return json_response({"meta": {key: props[key]}})


def create_image_metadata(req: Req) -> webob.Response:
    _proxied(req, "no_image_metadata_limit")
    body = req.body(schemas.METADATA_SET)
    req.authorize("os_compute_api:image-metadata")
    doc = _image(req)
    wanted = {**properties(doc), **body["metadata"]}
    _set_properties(req, doc, wanted)
    return json_response({"metadata": wanted})


def replace_image_metadata(req: Req) -> webob.Response:
    _proxied(req, "no_image_metadata_limit")
    body = req.body(schemas.METADATA_SET)
    req.authorize("os_compute_api:image-metadata")
    _set_properties(req, _image(req), dict(body["metadata"]))
    return json_response({"metadata": body["metadata"]})


def update_image_metadata(req: Req) -> webob.Response:
    _proxied(req, "no_image_metadata_limit")
    body = req.body(schemas.METADATA_ITEM)
    req.authorize("os_compute_api:image-metadata")
    key = req.arg("key")
    if key not in body["meta"]:
        raise BadRequest("Request body and URI mismatch")
    doc = _image(req)
    _set_properties(req, doc, {**properties(doc), key: body["meta"][key]})
    return json_response({"meta": body["meta"]})


def delete_image_metadata(req: Req) -> webob.Response:
    _proxied(req, "no_image_metadata_limit")
    req.authorize("os_compute_api:image-metadata")
    doc, key = _image(req), req.arg("key")
    props = properties(doc)
    if key not in props:
        raise NotFound("Invalid metadata key")
    _set_properties(req, doc, {k: v for k, v in props.items() if k != key})
    return empty_response(204)
