"""The identity API's handlers and route table (Keystone v3 paths and shapes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import webob

from stratus.identity import auth, store
from stratus.identity.http.errors import IdentityError
from stratus.storage import engine as db
from stratus.web.inputs import InputError, decode_json

if TYPE_CHECKING:
    from stratus.identity.http.app import IdentityDeps

VERSION_ID, UPDATED = "v3.14", "2020-04-07T00:00:00Z"
MEDIA = [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}]


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

    def body(self) -> Any:
        try:
            return decode_json(self.webob.body or b"")
        except InputError as exc:
            raise IdentityError(400, f"Malformed request body: {exc}") from None

    def member(self, key: str) -> Mapping[str, Any]:
        body = self.body()
        if not isinstance(body, Mapping) or not isinstance(body.get(key), Mapping):
            raise IdentityError(400, f"The request body must hold a '{key}' object.")
        return body[key]

    @property
    def is_admin(self) -> bool:
        return self.caller is not None and any(r.name == "admin" for r in self.caller.roles)

    def require_admin(self) -> None:
        if not self.is_admin:
            raise IdentityError(403, "You are not authorized to perform the requested "
                                "action (the admin role is needed).")


Handler = Callable[[Req], webob.Response]


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


def _version_doc(base: str) -> dict[str, Any]:
    return {"id": VERSION_ID, "status": "stable", "updated": UPDATED, "media-types": MEDIA,
            "links": [{"rel": "self", "href": f"{base}/v3/"}]}


def versions(request: webob.Request) -> webob.Response:
    return respond({"versions": {"values": [_version_doc(request.host_url)]}}, 300)


def version(request: webob.Request) -> webob.Response:
    return respond({"version": _version_doc(request.host_url)})


# ---- tokens -------------------------------------------------------------------------------

def issue_token(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:   # authenticating writes nothing
        try:
            token, found = auth.authenticate(conn, req.deps.codec, req.body(),
                                             req.webob.headers.get("X-Auth-Token"))
        except auth.BadAuthRequest as exc:
            raise IdentityError(400, str(exc)) from None
        except (auth.AuthFailed, auth.NotAuthorizedForScope) as exc:
            raise IdentityError(401, str(exc)) from None
    catalog = None if req.param("nocatalog") is not None else req.deps.catalog
    return respond(auth.token_body(found, catalog), 201, {"X-Subject-Token": token})


def _subject(req: Req) -> tuple[str, auth.Validated]:
    token = req.webob.headers.get("X-Subject-Token")
    if not token:
        raise IdentityError(400, "X-Subject-Token is required.")
    # Checking somebody else's token is for services (keystonemiddleware) and admins.
    if req.caller is not None and token != req.webob.headers.get("X-Auth-Token") and \
            not (req.is_admin or any(r.name == "service" for r in req.caller.roles)):
        raise IdentityError(403, "Validating another user's token needs the admin or "
                                "service role.")
    with db.read(req.deps.engine) as conn:
        try:
            return token, auth.validate(conn, req.deps.codec, token)
        except auth.AuthFailed as exc:
            raise IdentityError(404, f"Could not find token: {exc}") from None


def check_token(req: Req) -> webob.Response:
    token, found = _subject(req)
    catalog = None if req.param("nocatalog") is not None else req.deps.catalog
    return respond(auth.token_body(found, catalog), 200, {"X-Subject-Token": token})


def revoke_token(req: Req) -> webob.Response:
    _, found = _subject(req)
    with db.write(req.deps.engine) as conn:
        store.revoke(conn, found.token.audit_id, found.token.expires_at)
    return no_content()


def my_catalog(req: Req) -> webob.Response:
    return respond({"catalog": req.deps.catalog.render(),
                    "links": {"self": f"{req.url}/auth/catalog"}})


def my_projects(req: Req) -> webob.Response:
    assert req.caller is not None
    with db.read(req.deps.engine) as conn:
        found = store.list_projects(conn, user_id=req.caller.user.id)
    return respond({"projects": [_project(req, p) for p in found if p.enabled],
                    "links": _links(req, "auth/projects")})


def my_domains(req: Req) -> webob.Response:
    return respond({"domains": [_domain(req)], "links": _links(req, "auth/domains")})


# ---- projects, users, roles -----------------------------------------------------------------

def _links(req: Req, what: str) -> dict[str, Any]:
    return {"self": f"{req.url}/{what}", "previous": None, "next": None}


def _project(req: Req, p: store.Project) -> dict[str, Any]:
    return {"id": p.id, "name": p.name, "description": p.description, "enabled": p.enabled,
            "domain_id": p.domain_id, "parent_id": p.domain_id, "is_domain": False,
            "tags": [], "options": {}, "links": {"self": f"{req.url}/projects/{p.id}"}}


def _user(req: Req, u: store.User) -> dict[str, Any]:
    return {"id": u.id, "name": u.name, "enabled": u.enabled, "domain_id": u.domain_id,
            "default_project_id": u.default_project_id, "password_expires_at": None,
            "options": {}, "links": {"self": f"{req.url}/users/{u.id}"}}


def _role(req: Req, r: store.Role) -> dict[str, Any]:
    return {"id": r.id, "name": r.name, "domain_id": None, "description": None,
            "options": {}, "links": {"self": f"{req.url}/roles/{r.id}"}}


def _domain(req: Req) -> dict[str, Any]:
    return {"id": store.DOMAIN_ID, "name": store.DOMAIN_NAME, "enabled": True,
            "description": "The default domain", "tags": [], "options": {},
            "links": {"self": f"{req.url}/domains/{store.DOMAIN_ID}"}}


def _text(body: Mapping[str, Any], key: str, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise IdentityError(400, f"'{key}' is a required property.")
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 255:
        raise IdentityError(400, f"'{key}' must be a non-empty string of at most 255 "
                            "characters.")
    return value


def _flag(body: Mapping[str, Any], key: str) -> bool | None:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise IdentityError(400, f"'{key}' must be true or false.")
    return value


def _domain_of(body: Mapping[str, Any]) -> None:
    if body.get("domain_id") not in (None, store.DOMAIN_ID):
        raise IdentityError(400, "Only the default domain exists here.")


def list_projects(req: Req) -> webob.Response:
    assert req.caller is not None
    with db.read(req.deps.engine) as conn:
        found = store.list_projects(conn, name=req.param("name"),
                                    user_id=None if req.is_admin else req.caller.user.id)
    return respond({"projects": [_project(req, p) for p in found],
                    "links": _links(req, "projects")})


def _get_project(conn: Any, project_id: str) -> store.Project:
    found = store.get_project(conn, project_id)
    if found is None:
        raise IdentityError(404, f"Could not find project: {project_id}.")
    return found


def show_project(req: Req) -> webob.Response:
    assert req.caller is not None
    with db.read(req.deps.engine) as conn:
        found = _get_project(conn, req.args["id"])
        if not req.is_admin and not store.roles_of(conn, req.caller.user.id, found.id):
            raise IdentityError(403, "You are not authorized to see this project.")
    return respond({"project": _project(req, found)})


def create_project(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("project")
    _domain_of(body)
    name = _text(body, "name", required=True)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        try:
            made = store.create_project(conn, name, _text(body, "description") or "",
                                        enabled=_flag(body, "enabled") is not False)
        except store.IdentityConflict as exc:
            raise IdentityError(409, f"Conflict occurred attempting to store project - {exc}."
                                ) from None
    return respond({"project": _project(req, made)}, 201)


def update_project(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("project")
    values: dict[str, Any] = {}
    for key in ("name", "description"):
        if key in body:
            values[key] = _text(body, key) or ""
    if "enabled" in body:
        values["enabled"] = bool(_flag(body, "enabled"))
    with db.write(req.deps.engine) as conn:
        _get_project(conn, req.args["id"])
        if values.get("name") and (other := store.find_project(conn, values["name"])) \
                and other.id != req.args["id"]:
            raise IdentityError(409, f"a project named {values['name']!r} already exists")
        store.update_project(conn, req.args["id"], **values)
        found = _get_project(conn, req.args["id"])
    return respond({"project": _project(req, found)})


def delete_project(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not store.delete_project(conn, req.args["id"]):
            raise IdentityError(404, f"Could not find project: {req.args['id']}.")
    return no_content()


def list_users(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        found = store.list_users(conn, name=req.param("name"))
    return respond({"users": [_user(req, u) for u in found], "links": _links(req, "users")})


def _get_user(conn: Any, user_id: str) -> store.User:
    found = store.get_user(conn, user_id)
    if found is None:
        raise IdentityError(404, f"Could not find user: {user_id}.")
    return found


def _self_or_admin(req: Req, user_id: str) -> None:
    assert req.caller is not None
    if req.caller.user.id != user_id:
        req.require_admin()


def show_user(req: Req) -> webob.Response:
    _self_or_admin(req, req.args["id"])
    with db.read(req.deps.engine) as conn:
        found = _get_user(conn, req.args["id"])
    return respond({"user": _user(req, found)})


def create_user(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("user")
    _domain_of(body)
    name = _text(body, "name", required=True)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        project = _text(body, "default_project_id")
        if project is not None:
            _get_project(conn, project)
        try:
            made = store.create_user(conn, name, _text(body, "password"), project,
                                     enabled=_flag(body, "enabled") is not False)
        except store.IdentityConflict as exc:
            raise IdentityError(409, f"Conflict occurred attempting to store user - {exc}."
                                ) from None
    return respond({"user": _user(req, made)}, 201)


def update_user(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("user")
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = _text(body, "name")
    if "enabled" in body:
        values["enabled"] = bool(_flag(body, "enabled"))
    if "default_project_id" in body:
        values["default_project_id"] = _text(body, "default_project_id")
    with db.write(req.deps.engine) as conn:
        _get_user(conn, req.args["id"])
        store.update_user(conn, req.args["id"], password=_text(body, "password"), **values)
        found = _get_user(conn, req.args["id"])
    return respond({"user": _user(req, found)})


def delete_user(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not store.delete_user(conn, req.args["id"]):
            raise IdentityError(404, f"Could not find user: {req.args['id']}.")
    return no_content()


def user_projects(req: Req) -> webob.Response:
    _self_or_admin(req, req.args["id"])
    with db.read(req.deps.engine) as conn:
        _get_user(conn, req.args["id"])
        found = store.list_projects(conn, user_id=req.args["id"])
    return respond({"projects": [_project(req, p) for p in found],
                    "links": _links(req, f"users/{req.args['id']}/projects")})


def list_roles(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = store.list_roles(conn)
    name = req.param("name")
    return respond({"roles": [_role(req, r) for r in found if name in (None, r.name)],
                    "links": _links(req, "roles")})


def show_role(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = store.find_role(conn, req.args["id"])
    if found is None:
        raise IdentityError(404, f"Could not find role: {req.args['id']}.")
    return respond({"role": _role(req, found)})


def create_role(req: Req) -> webob.Response:
    req.require_admin()
    name = _text(req.member("role"), "name", required=True)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        if store.find_role(conn, name) is not None:
            raise IdentityError(409, f"Conflict occurred attempting to store role - a role "
                                f"named {name!r} already exists.")
        made = store.ensure_role(conn, name)
    return respond({"role": _role(req, made)}, 201)


def _assignment_args(req: Req, conn: Any) -> tuple[str, str, str]:
    project = _get_project(conn, req.args["project"])
    user = _get_user(conn, req.args["user"])
    role = store.find_role(conn, req.args["role"])
    if role is None:
        raise IdentityError(404, f"Could not find role: {req.args['role']}.")
    return user.id, project.id, role.id


def grant_role(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        store.grant(conn, *_assignment_args(req, conn))
    return no_content()


def check_role(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        user, project, role = _assignment_args(req, conn)
        held = {r.id for r in store.roles_of(conn, user, project)}
    if role not in held:
        raise IdentityError(404, "The user does not hold that role on that project.")
    return no_content()


def revoke_role(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not store.ungrant(conn, *_assignment_args(req, conn)):
            raise IdentityError(404, "The user does not hold that role on that project.")
    return no_content()


def project_user_roles(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        project = _get_project(conn, req.args["project"])
        user = _get_user(conn, req.args["user"])
        found = store.roles_of(conn, user.id, project.id)
    return respond({"roles": [_role(req, r) for r in found],
                    "links": _links(req, f"projects/{project.id}/users/{user.id}/roles")})


def role_assignments(req: Req) -> webob.Response:
    assert req.caller is not None
    user_id = req.param("user.id")
    if not req.is_admin and user_id != req.caller.user.id:
        raise IdentityError(403, "Listing others' role assignments needs the admin role.")
    with db.read(req.deps.engine) as conn:
        found = store.list_assignments(conn, user_id=user_id,
                                       project_id=req.param("scope.project.id"))
        roles = {r.id: r for r in store.list_roles(conn)}
    role_id = req.param("role.id")
    out = [{"user": {"id": u}, "scope": {"project": {"id": p}},
            "role": {"id": r, "name": roles[r].name},
            "links": {"assignment": f"{req.url}/projects/{p}/users/{u}/roles/{r}"}}
           for u, p, r in found if role_id in (None, r)]
    return respond({"role_assignments": out, "links": _links(req, "role_assignments")})


def list_domains(req: Req) -> webob.Response:
    name = req.param("name")
    found = [_domain(req)] if name in (None, store.DOMAIN_NAME) else []
    return respond({"domains": found, "links": _links(req, "domains")})


def show_domain(req: Req) -> webob.Response:
    if req.args["id"] not in (store.DOMAIN_ID, store.DOMAIN_NAME):
        raise IdentityError(404, f"Could not find domain: {req.args['id']}.")
    return respond({"domain": _domain(req)})


def list_services(req: Req) -> webob.Response:
    kind = req.param("type")
    return respond({"services": [s for s in req.deps.catalog.services()
                                 if kind in (None, s["type"])],
                    "links": _links(req, "services")})


def list_endpoints(req: Req) -> webob.Response:
    interface = req.param("interface")
    return respond({"endpoints": [e for e in req.deps.catalog.endpoints()
                                  if interface in (None, e["interface"])],
                    "links": _links(req, "endpoints")})


def list_regions(req: Req) -> webob.Response:
    region = req.deps.catalog.region
    return respond({"regions": [{"id": region, "description": "", "parent_region_id": None,
                                 "links": {"self": f"{req.url}/regions/{region}"}}],
                    "links": _links(req, "regions")})


ROUTES: list[tuple[str, Mapping[str, Handler]]] = [
    ("/v3/auth/tokens", {"POST": issue_token, "GET": check_token, "DELETE": revoke_token}),
    ("/v3/auth/catalog", {"GET": my_catalog}),
    ("/v3/auth/projects", {"GET": my_projects}),
    ("/v3/auth/domains", {"GET": my_domains}),
    ("/v3/projects", {"GET": list_projects, "POST": create_project}),
    ("/v3/projects/{id}", {"GET": show_project, "PATCH": update_project,
                           "DELETE": delete_project}),
    ("/v3/projects/{project}/users/{user}/roles", {"GET": project_user_roles}),
    ("/v3/projects/{project}/users/{user}/roles/{role}", {
        "PUT": grant_role, "GET": check_role, "DELETE": revoke_role}),
    ("/v3/users", {"GET": list_users, "POST": create_user}),
    ("/v3/users/{id}", {"GET": show_user, "PATCH": update_user, "DELETE": delete_user}),
    ("/v3/users/{id}/projects", {"GET": user_projects}),
    ("/v3/roles", {"GET": list_roles, "POST": create_role}),
    ("/v3/roles/{id}", {"GET": show_role}),
    ("/v3/role_assignments", {"GET": role_assignments}),
    ("/v3/domains", {"GET": list_domains}),
    ("/v3/domains/{id}", {"GET": show_domain}),
    ("/v3/services", {"GET": list_services}),
    ("/v3/endpoints", {"GET": list_endpoints}),
    ("/v3/regions", {"GET": list_regions}),
]
