"""``/v2/images/{id}/members``: sharing an image (visibility ``shared``) with other
projects, which accept or reject it.

Glance's rules: only ``shared`` images have members; the owner (or an admin) adds and
removes them; only the member itself (or an admin) sets its status; a member sees its
own membership only, the owner all of them; an image is listed to a member by default
once accepted (``member_status`` asks for others), and shown to it whatever the status.
"""

from __future__ import annotations

from collections.abc import Mapping

import webob

from stratus.image import model, store
from stratus.image.http.common import Req, no_content, now, respond, visible
from stratus.image.http.errors import ImageAPIError
from stratus.storage import engine as db

# Glance's [DEFAULT] image_member_quota.
MEMBER_QUOTA = 128


def _shared(image: model.Image, what: str) -> None:
    if image.visibility != "shared":
        raise ImageAPIError(403, f"Not allowed to {what} members for image {image.id}: "
                            "Only shared images have members.")


def _is_owner(req: Req, image: model.Image) -> bool:
    return req.admin or image.owner == req.project


def add_member(req: Req) -> webob.Response:
    req.require_write()
    body = req.json()
    member_id = body.get("member") if isinstance(body, Mapping) else None
    if not isinstance(member_id, str) or not member_id.strip() or len(member_id) > 255:
        raise ImageAPIError(400, "The request body must be {\"member\": \"<project id>\"} "
                            "with a project id of 1 to 255 characters.")
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        _shared(image, "create")
        if not _is_owner(req, image):
            raise ImageAPIError(403, f"Not allowed to create members for image {image.id}.")
        if store.member(conn, image.id, member_id) is not None:
            raise ImageAPIError(409, f"Member {member_id} is duplicated for image "
                                f"{image.id}")
        if store.count_members(conn, image.id) >= MEMBER_QUOTA:
            raise ImageAPIError(413, f"Image member limit exceeded for image {image.id}: "
                                f"at most {MEMBER_QUOTA} members.")
        when = now()
        made = model.Member(image.id, member_id, "pending", when, when)
        store.add_member(conn, made)
    return respond(model.render_member(made))


def list_members(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        _shared(image, "list")
        found = store.members(conn, image.id)
    if not _is_owner(req, image):
        found = [m for m in found if m.member_id == req.project]
    return respond({"members": [model.render_member(m) for m in found],
                    "schema": "/v2/schemas/members"})


def show_member(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        found = store.member(conn, image.id, req.args["member"])
    missing = ImageAPIError(404, f"{req.args['member']} not found in the member list of "
                            f"the image {image.id}.")
    if image.visibility != "shared" or found is None:
        raise missing
    if not _is_owner(req, image) and found.member_id != req.project:
        raise missing
    return respond(model.render_member(found))


def update_member(req: Req) -> webob.Response:
    req.require_write()
    body = req.json()
    status = body.get("status") if isinstance(body, Mapping) else None
    if status not in model.MEMBER_STATUSES:
        raise ImageAPIError(400, f"Incorrect request: Status must be one of "
                            f"{', '.join(model.MEMBER_STATUSES)}, not {status!r}.")
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        _shared(image, "update")
        found = store.member(conn, image.id, req.args["member"])
        if found is None or (not req.admin and found.member_id != req.project and
                             image.owner != req.project):
            raise ImageAPIError(404, f"{req.args['member']} not found in the member list "
                                f"of the image {image.id}.")
        if not req.admin and found.member_id != req.project:
            raise ImageAPIError(403, f"Not allowed to update members for image {image.id}: "
                                "only the member itself accepts or rejects an image.")
        changed = model.Member(found.image_id, found.member_id, status, found.created_at,
                               now())
        store.set_member_status(conn, changed)
    return respond(model.render_member(changed))


def delete_member(req: Req) -> webob.Response:
    req.require_write()
    with db.write(req.deps.engine) as conn:
        image = visible(req, conn, req.args["id"])
        _shared(image, "delete")
        if not _is_owner(req, image):
            raise ImageAPIError(403, f"Not allowed to delete members for image {image.id}.")
        if not store.delete_member(conn, image.id, req.args["member"]):
            raise ImageAPIError(404, f"{req.args['member']} not found in the member list "
                                f"of the image {image.id}.")
    return no_content()
