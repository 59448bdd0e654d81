"""What every identity handler shares: the request and its caller, reading bodies and
query filters, Keystone's answer shapes, and who may do what.

Policy is Keystone's defaults as a project-scoped admin sees them
(``enforce_scope`` off): the ``admin`` role, in any scope, may do everything; a user
may read and change what is its own (itself, its password, its application and EC2
credentials, its tokens, its projects and groups)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import webob

from stratus.identity import auth, store
from stratus.identity.http.errors import IdentityError
from stratus.web.bodies import BodyError, read_body
from stratus.web.inputs import InputError, decode_json

if TYPE_CHECKING:
    from stratus.identity.http.app import IdentityDeps

# Keystone's [oslo_middleware] max_request_body_size is 114688; ours is smaller and
# bounds chunked bodies too.
MAX_BODY_BYTES = 65_536


@dataclass
class Req:
    webob: webob.Request
    deps: IdentityDeps
    caller: auth.Validated | None
    query: list[tuple[str, str]]
    args: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.webob.host_url + "/v3"

    def param(self, name: str) -> str | None:
        return next((v for k, v in self.query if k == name), None)

    def flag_param(self, name: str) -> bool | None:
        """A boolean query filter (``enabled=false``); None when absent."""
        value = self.param(name)
        if value is None:
            return None
        if value.lower() in ("", "true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise IdentityError(400, f"Invalid value for {name}: {value!r} (true or false).")

    def body(self) -> Any:
        try:
            return decode_json(read_body(self.webob.environ, MAX_BODY_BYTES))
        except BodyError as exc:
            raise IdentityError(exc.status, str(exc)) from None
        except InputError as exc:
            raise IdentityError(400, f"Malformed request body: {exc}") from None

    def member(self, key: str) -> Mapping[str, Any]:
        body = self.body()
        if not isinstance(body, Mapping) or not isinstance(body.get(key), Mapping):
            raise IdentityError(400, f"The request body must hold a '{key}' object.")
        return body[key]

    @property
    def who(self) -> auth.Validated:
        assert self.caller is not None
        return self.caller

    @property
    def is_admin(self) -> bool:
        return self.caller is not None and "admin" in self.caller.role_names

    def require_admin(self) -> None:
        if not self.is_admin:
            raise forbidden("the admin role is needed")

    def require_self_or_admin(self, user_id: str) -> None:
        if self.who.user.id != user_id:
            self.require_admin()

    def require_unrestricted(self) -> None:
        """A token from a restricted application credential makes no credentials."""
        cred = self.who.app_cred
        if cred is not None and not cred.unrestricted:
            raise forbidden("a restricted application credential cannot manage "
                            "application credentials")


Handler = Callable[[Req], webob.Response]


def forbidden(why: str) -> IdentityError:
    return IdentityError(403, f"You are not authorized to perform the requested action: {why}.")


def respond(body: Any, status: int = 200, headers: Mapping[str, str] | None = None
            ) -> webob.Response:
    resp = webob.Response(status=status, body=json.dumps(body).encode(),
                          content_type="application/json", charset=None)
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def no_content() -> webob.Response:
    resp = webob.Response(status=204, content_type=None)
    resp.content_length = 0
    return resp


def links(req: Req, what: str) -> dict[str, Any]:
    return {"self": f"{req.url}/{what}", "previous": None, "next": None}


def not_found(what: str, key: str) -> IdentityError:
    return IdentityError(404, f"Could not find {what}: {key}.")


def conflict(what: str, exc: Exception) -> IdentityError:
    return IdentityError(409, f"Conflict occurred attempting to store {what} - {exc}.")


# ---- body values ----------------------------------------------------------------------

def text(body: Mapping[str, Any], key: str, *, required: bool = False, max_len: int = 255,
         empty_ok: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise IdentityError(400, f"'{key}' is a required property.")
        return None
    if not isinstance(value, str) or (not value.strip() and not empty_ok) or \
            len(value) > max_len:
        raise IdentityError(400, f"Invalid input for field '{key}': a string of 1 to "
                            f"{max_len} characters is expected.")
    return value


def flag(body: Mapping[str, Any], key: str) -> bool | None:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise IdentityError(400, f"Invalid input for field '{key}': {value!r} is not of "
                            "type 'boolean'.")
    return value


def extra_of(body: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    """Attributes Keystone keeps as given (``email`` on a user, say)."""
    return {k: v for k, v in body.items() if k not in known and k not in ("links", "id")}


# ---- records as Keystone shows them -----------------------------------------------------------

def render_project(req: Req, p: store.Project) -> dict[str, Any]:
    return {**p.extra, "id": p.id, "name": p.name, "description": p.description,
            "enabled": p.enabled, "domain_id": p.domain_id,
            "parent_id": p.parent_id or p.domain_id, "is_domain": False,
            "tags": list(p.tags), "options": {},
            "links": {"self": f"{req.url}/projects/{p.id}"}}


def render_user(req: Req, u: store.User) -> dict[str, Any]:
    return {**u.extra, "id": u.id, "name": u.name, "enabled": u.enabled,
            "domain_id": u.domain_id, "default_project_id": u.default_project_id,
            "password_expires_at": None, "options": {},
            "links": {"self": f"{req.url}/users/{u.id}"}}


def render_role(req: Req, r: store.Role) -> dict[str, Any]:
    return {"id": r.id, "name": r.name, "domain_id": r.domain_id,
            "description": r.description, "options": {},
            "links": {"self": f"{req.url}/roles/{r.id}"}}


def render_domain(req: Req, d: store.Domain) -> dict[str, Any]:
    return {"id": d.id, "name": d.name, "enabled": d.enabled, "description": d.description,
            "tags": [], "options": {}, "links": {"self": f"{req.url}/domains/{d.id}"}}


def get_project(conn: Any, project_id: str) -> store.Project:
    found = store.get_project(conn, project_id)
    if found is None:
        raise not_found("project", project_id)
    return found


def get_user(conn: Any, user_id: str) -> store.User:
    found = store.get_user(conn, user_id)
    if found is None:
        raise not_found("user", user_id)
    return found


def get_domain(conn: Any, domain_id: str) -> store.Domain:
    found = store.get_domain(conn, domain_id)
    if found is None:
        raise not_found("domain", domain_id)
    return found


def get_role(conn: Any, role_id: str) -> store.Role:
    found = store.find_role(conn, role_id)
    if found is None:
        raise not_found("role", role_id)
    return found
