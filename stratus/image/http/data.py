"""Image data: upload (``PUT .../file``), download, and the interoperable import
(``PUT .../stage`` then ``POST .../import`` with ``glance-direct``), with the tasks an
import leaves.

An upload is streamed from the request to a file whatever its transfer encoding,
measured and hashed on the way (``image/data.py``), and the image becomes ``active``
only once every byte is on disk: a body cut short, over the size limit or with the
wrong ``Content-MD5`` leaves the image ``queued`` and nothing stored.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import webob

from stratus.image import data, model, store
from stratus.image.http.common import Req, no_content, now, owned, respond, visible
from stratus.image.http.errors import ImageAPIError
from stratus.image.tasks import TIME_TO_LIVE, Task, render
from stratus.storage import engine as db
from stratus.web.bodies import BodyError, body_pieces, declared_length, is_chunked

IMPORT_METHODS = ("glance-direct",)


def _octet_stream(req: Req) -> None:
    if (req.webob.content_type or "application/octet-stream") != "application/octet-stream":
        raise ImageAPIError(415, "Upload image data as application/octet-stream.")


def _writable_image(req: Req) -> model.Image:
    with db.read(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
    owned(req, image)
    declared = declared_length(req.webob.environ)
    if declared is not None and not is_chunked(req.webob.environ) and \
            declared > req.deps.max_image_size:
        raise ImageAPIError(413, f"Image data of {declared} bytes exceeds the limit of "
                            f"{req.deps.max_image_size} bytes.")
    return image


def _take(req: Req, image: model.Image, busy: str, target: Any) -> data.Received:
    """Stream the body into ``target`` while the image is ``busy`` (saving, uploading);
    on any failure the image goes back to queued and the error is the caller's answer."""
    if not _swap(req, image.id, "queued", busy):
        raise ImageAPIError(409, f"Image status transition from {image.status} to {busy} "
                            "is not allowed (data goes once into a queued image).")
    try:
        expected = data.content_md5(req.webob.headers.get("Content-MD5"))
    except ValueError as exc:
        _swap(req, image.id, busy, "queued")
        raise ImageAPIError(400, str(exc)) from None
    try:
        return data.receive(body_pieces(req.webob.environ, req.deps.max_image_size),
                            target, expected)
    except BodyError as exc:
        _swap(req, image.id, busy, "queued")
        if exc.status == 413:
            raise ImageAPIError(413, f"Image data exceeds the limit of "
                                f"{req.deps.max_image_size} bytes.") from None
        raise ImageAPIError(exc.status, str(exc)) from None
    except data.ChecksumMismatch as exc:
        _swap(req, image.id, busy, "queued")
        raise ImageAPIError(400, str(exc)) from None
    except BaseException:
        _swap(req, image.id, busy, "queued")
        raise


def _swap(req: Req, image_id: str, expected: str, status: str, **values: Any) -> bool:
    with db.write(req.deps.engine) as conn:
        return store.set_status(conn, image_id, expected, status, now(), **values)


def _deleted_meanwhile(req: Req, image_id: str, *paths: Any) -> ImageAPIError:
    for path in paths:
        path.unlink(missing_ok=True)
    return ImageAPIError(410, f"Image {image_id} was deleted during the upload.")


def upload(req: Req) -> webob.Response:
    _octet_stream(req)
    image = _writable_image(req)
    target = req.deps.data_path(image.id)
    got = _take(req, image, "saving", target)
    if not _swap(req, image.id, "saving", "active", size=got.size, checksum=got.checksum,
                 os_hash_algo=data.HASH_ALGO, os_hash_value=got.os_hash_value):
        raise _deleted_meanwhile(req, image.id, target)
    return no_content()


def download(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
    req.require_write()   # Glance's download_image: the member role
    if image.status == "deactivated" and not req.admin:
        raise ImageAPIError(403, "The requested image has been deactivated. Image data "
                            "download is forbidden.")
    path = req.deps.data_path(image.id)
    if image.status not in model.HAS_DATA or not path.exists():
        return no_content()
    resp = webob.Response(status=200, content_type="application/octet-stream")
    resp.app_iter = data.read(path)
    resp.content_length = path.stat().st_size
    if image.checksum:
        resp.headers["Content-MD5"] = image.checksum
    return resp


# ---- interoperable import -------------------------------------------------------------------

def stage(req: Req) -> webob.Response:
    _octet_stream(req)
    image = _writable_image(req)
    target = req.deps.staging_path(image.id)
    got = _take(req, image, "uploading", target)
    with db.write(req.deps.engine) as conn:
        if store.get(conn, image.id) is None:
            raise _deleted_meanwhile(req, image.id, target)
        store.stage(conn, image.id, got.size, got.checksum, got.os_hash_value, now())
    return no_content()


def _import_request(req: Req) -> dict[str, Any]:
    body = req.json()
    if not isinstance(body, Mapping) or not isinstance(body.get("method"), Mapping):
        raise ImageAPIError(400, "The request body must name an import method: "
                            '{"method": {"name": "glance-direct"}}.')
    name = body["method"].get("name")
    if name not in IMPORT_METHODS:
        raise ImageAPIError(400, f"Import method {name!r} is not supported here; "
                            f"available: {', '.join(IMPORT_METHODS)}.")
    stores = body.get("stores")
    if stores is not None and (not isinstance(stores, list) or
                               any(s != model.STORE_ID for s in stores)):
        raise ImageAPIError(409, f"Unknown store(s) {stores!r}; the only store is "
                            f"{model.STORE_ID!r}.")
    return dict(body)


def import_image(req: Req) -> webob.Response:
    body = _import_request(req)
    when = now()
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        owned(req, image)
        staged = store.staged(conn, image.id)
        if image.status != "uploading" or staged is None:
            raise ImageAPIError(409, "Image needs to be staged before 'glance-direct' "
                                "method can be used")
        if not store.set_status(conn, image.id, "uploading", "importing", when):
            raise ImageAPIError(409, f"Image {image.id} is being imported already.")
        task = Task(id=str(uuid.uuid4()), type="api_image_import", status="processing",
                    owner=req.project, created_at=when, updated_at=when, image_id=image.id,
                    request_id=req.request_id, user_id=req.ctx.user_id,
                    input={"image_id": image.id, "import_req": body,
                           "backend": [model.STORE_ID]},
                    expires_at=when + TIME_TO_LIVE)
        store.save_task(conn, task)
    source, target = req.deps.staging_path(image.id), req.deps.data_path(image.id)
    try:
        data.move(source, target)
    except OSError as exc:
        with db.write(req.deps.engine) as conn:
            store.set_status(conn, image.id, "importing", "queued", now())
            store.unstage(conn, image.id)
            store.save_task(conn, _ended(task, "failure", message=str(exc)))
        source.unlink(missing_ok=True)
        return no_content(202)
    with db.write(req.deps.engine) as conn:
        if not store.set_status(conn, image.id, "importing", "active", now(),
                                size=staged.size, checksum=staged.checksum,
                                os_hash_algo=data.HASH_ALGO,
                                os_hash_value=staged.os_hash_value):
            target.unlink(missing_ok=True)
            store.save_task(conn, _ended(task, "failure", message="The image was deleted "
                                         "during the import."))
        else:
            store.unstage(conn, image.id)
            store.save_task(conn, _ended(task, "success", result={"image_id": image.id}))
    return no_content(202)


def _ended(task: Task, status: str, *, message: str = "",
           result: Mapping[str, Any] | None = None) -> Task:
    when = now()
    return replace(task, status=status, message=message, result=result, updated_at=when,
                   expires_at=when + TIME_TO_LIVE)


def image_tasks(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        found = store.tasks(conn, image_id=image.id)
    return respond({"tasks": [render(t) for t in found]})
