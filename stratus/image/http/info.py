"""Discovery: the versions document, ``/v2/info/import``, ``/v2/info/stores`` (one file
store holds every image), ``/v2/info/usage``; and Glance's tasks API (admin only), which
lists the tasks imports leave and refuses to fetch image data from URLs."""

from __future__ import annotations

from collections.abc import Mapping

import webob

from stratus.image import model, store
from stratus.image.http.common import Req, respond
from stratus.image.http.data import IMPORT_METHODS
from stratus.image.http.errors import ImageAPIError
from stratus.image.tasks import TYPES, render
from stratus.storage import engine as db

# Glance v2.0 to v2.16 (v2.17's location API is not served).
CURRENT_MINOR = 16


def versions(request: webob.Request) -> webob.Response:
    base = request.host_url
    values = [{"id": f"v2.{minor}", "status": "CURRENT" if minor == CURRENT_MINOR
               else "SUPPORTED", "links": [{"rel": "self", "href": f"{base}/v2/"}]}
              for minor in range(CURRENT_MINOR, -1, -1)]
    return respond({"versions": values}, 300)


def import_methods(req: Req) -> webob.Response:
    return respond({"import-methods": {"description": "Import methods available.",
                                       "type": "array", "value": list(IMPORT_METHODS)}})


def _store() -> dict[str, object]:
    return {"id": model.STORE_ID, "description": "Image data on the image service's file "
            "system ([image] store_dir)", "default": True}


def stores(req: Req) -> webob.Response:
    return respond({"stores": [_store()]})


def stores_detail(req: Req) -> webob.Response:
    if not req.admin:
        raise ImageAPIError(403, "You are not authorized to see the stores' details.")
    return respond({"stores": [{**_store(), "type": "file", "weight": 0,
                                "properties": {"data_dir": str(req.deps.store_dir)}}]})


def usage(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        size, count = store.total_size(conn, req.project)
        staging = len(store.tasks(conn, owner=req.project, status="processing"))
    unlimited = -1
    return respond({"usage": {
        "image_size_total": {"limit": unlimited, "usage": size // (1024 * 1024)},
        "image_stage_total": {"limit": unlimited, "usage": 0},
        "image_count_total": {"limit": unlimited, "usage": count},
        "image_count_uploading": {"limit": unlimited, "usage": staging}}})


# ---- /v2/tasks ------------------------------------------------------------------------------

def _tasks_admin(req: Req) -> None:
    if not req.admin:
        raise ImageAPIError(403, "You are not authorized to complete this action "
                            "(the tasks API is an admin's).")


def create_task(req: Req) -> webob.Response:
    _tasks_admin(req)
    body = req.json()
    if not isinstance(body, Mapping) or body.get("type") not in TYPES or \
            not isinstance(body.get("input"), Mapping):
        raise ImageAPIError(400, f"A task needs a type ({', '.join(TYPES)}) and an input "
                            "object.")
    source = body["input"].get("import_from")
    raise ImageAPIError(400, f"URI {source!r} does not pass filtering: this image service "
                        "does not fetch image data from URLs. Upload the data (PUT "
                        "/v2/images/{id}/file) or stage and import it (glance-direct).")


def list_tasks(req: Req) -> webob.Response:
    _tasks_admin(req)
    status, kind = req.param("status"), req.param("type")
    with db.read(req.deps.engine) as conn:
        found = store.tasks(conn, status=status, type_=kind)
    return respond({"tasks": [render(t, full=False) for t in found],
                    "first": "/v2/tasks", "schema": "/v2/schemas/tasks"})


def show_task(req: Req) -> webob.Response:
    _tasks_admin(req)
    with db.read(req.deps.engine) as conn:
        found = store.get_task(conn, req.args["id"])
    if found is None:
        raise ImageAPIError(404, f"Task with the given ID {req.args['id']} could not be "
                            "found.")
    return respond(render(found))


def delete_task(req: Req) -> webob.Response:
    raise ImageAPIError(405, "This operation is currently not permitted on Glance Tasks. "
                        "They are auto deleted after reaching the time based on their "
                        "expires_at property.")
