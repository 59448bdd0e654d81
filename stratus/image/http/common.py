"""What every image API handler shares: the request, who is calling, and how answers look."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import webob

from stratus.image import model, store
from stratus.image.http.errors import ImageAPIError
from stratus.placement.http.wsgi import Context
from stratus.web.bodies import BodyError, read_body
from stratus.web.inputs import InputError, decode_json

if TYPE_CHECKING:
    from stratus.image.http.app import ImageDeps


@dataclass
class Req:
    webob: webob.Request
    deps: ImageDeps
    ctx: Context
    query: list[tuple[str, str]]
    args: dict[str, str] = field(default_factory=dict)
    request_id: str = ""

    @property
    def admin(self) -> bool:
        return "admin" in {r.lower() for r in self.ctx.roles}

    @property
    def project(self) -> str | None:
        return self.ctx.project_id or self.ctx.user_id

    @property
    def may_write(self) -> bool:
        """Glance's default policy: writes need the member role (or admin). A caller with
        no roles at all is a noauth2 user, for whom roles are not checked."""
        roles = {r.lower() for r in self.ctx.roles}
        return not roles or bool(roles & {"admin", "member"})

    def require_write(self) -> None:
        if not self.may_write:
            raise ImageAPIError(403, "You are not authorized to complete this action "
                                "(the member role is needed).")

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.query if k == name), None)

    def json(self) -> Any:
        """The JSON body, refused with 413 above ``deps.max_json_body_bytes`` (read in
        pieces, so a huge body is never held)."""
        try:
            raw = read_body(self.webob.environ, self.deps.max_json_body_bytes)
            return decode_json(raw)
        except BodyError as exc:
            raise ImageAPIError(exc.status, str(exc)) from None
        except InputError as exc:
            raise ImageAPIError(400, f"Malformed request body: {exc}") from None


Handler = Callable[[Req], webob.Response]


def respond(body: Any, status: int = 200, content_type: str = "application/json"
            ) -> webob.Response:
    return webob.Response(status=status, body=json.dumps(body).encode(),
                          content_type=content_type, charset=None)


def no_content(status: int = 204) -> webob.Response:
    resp = webob.Response(status=status, content_type=None)
    resp.content_length = 0
    return resp


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def visible(req: Req, conn: Any, image_id: str) -> model.Image:
    """The image if the caller may see it (as a member too), else 404."""
    found = store.get(conn, image_id)
    if found is None:
        raise ImageAPIError(404, f"No image found with ID {image_id}")
    if not model.visible_to(found, req.project, req.admin):
        membership = store.member(conn, found.id, req.project)
        if not model.visible_to(found, req.project, req.admin,
                                membership.status if membership else None):
            raise ImageAPIError(404, f"No image found with ID {image_id}")
    return found


def owned(req: Req, image: model.Image) -> None:
    """403 unless the caller owns the image (or is an admin) and may write."""
    req.require_write()
    if not req.admin and image.owner != req.project:
        raise ImageAPIError(403, "You are not permitted to modify an image you do not own.")
