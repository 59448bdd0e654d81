"""Version discovery, ``/v3/auth/tokens`` (issue, validate, check, revoke) and what a token
may see of itself (``/v3/auth/catalog``, ``projects``, ``domains``, ``system``).

Validating or revoking a token needs the admin or service role, or to be that token's
own user (Keystone's ``token_subject`` rule): a user may check and revoke any token of
its own. A revoked token is refused by every API of the deployment at once (the token
middleware's cache is dropped on every identity change)."""

from __future__ import annotations

import webob

from stratus.identity import assignments, auth, endpoints, store
from stratus.identity.http.common import (
    Req,
    forbidden,
    links,
    no_content,
    render_domain,
    render_project,
    respond,
)
from stratus.identity.http.errors import IdentityError
from stratus.storage import engine as db

VERSION_ID, UPDATED = "v3.14", "2020-04-07T00:00:00Z"
MEDIA = [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}]


def _version_doc(base: str) -> dict[str, object]:
    return {"id": VERSION_ID, "status": "stable", "updated": UPDATED, "media-types": MEDIA,
            "links": [{"rel": "self", "href": f"{base}/v3/"}]}


def versions(request: webob.Request) -> webob.Response:
    return respond({"versions": {"values": [_version_doc(request.host_url)]}}, 300)


def version(request: webob.Request) -> webob.Response:
    return respond({"version": _version_doc(request.host_url)})


def issue_token(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:   # authenticating writes nothing
        try:
            token, found = auth.authenticate(conn, req.deps.codec, req.body(),
                                             req.webob.headers.get("X-Auth-Token"))
        except auth.BadAuthRequest as exc:
            raise IdentityError(400, str(exc)) from None
        except (auth.AuthFailed, auth.NotAuthorizedForScope) as exc:
            raise IdentityError(401, str(exc)) from None
        body = auth.token_body(conn, found, req.param("nocatalog") is None)
    return respond(body, 201, {"X-Subject-Token": token})


def _subject(req: Req) -> tuple[str, auth.Validated]:
    token = req.webob.headers.get("X-Subject-Token")
    if not token:
        raise IdentityError(400, "X-Subject-Token is required.")
    with db.read(req.deps.engine) as conn:
        try:
            found = auth.validate(conn, req.deps.codec, token)
        except auth.AuthFailed as exc:
            raise IdentityError(404, f"Could not find token: {exc}") from None
    caller = req.who
    if found.user.id != caller.user.id and not (
            caller.role_names & {"admin", "service"}):
        raise forbidden("checking another user's token needs the admin or service role")
    return token, found


def check_token(req: Req) -> webob.Response:
    token, found = _subject(req)
    with db.read(req.deps.engine) as conn:
        body = auth.token_body(conn, found, req.param("nocatalog") is None)
    return respond(body, 200, {"X-Subject-Token": token})


def revoke_token(req: Req) -> webob.Response:
    _, found = _subject(req)
    with db.write(req.deps.engine) as conn:
        store.revoke(conn, found.token.audit_id, found.token.expires_at)
    return no_content()


def my_catalog(req: Req) -> webob.Response:
    who = req.who
    with db.read(req.deps.engine) as conn:
        catalog = endpoints.token_catalog(
            conn, user_id=who.user.id, project_id=who.project.id if who.project else None)
    return respond({"catalog": catalog, "links": {"self": f"{req.url}/auth/catalog"}})


def my_projects(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        ids = assignments.target_ids_of(conn, req.who.user.id, "project")
        found = store.list_projects(conn, ids=sorted(ids), enabled=True)
    return respond({"projects": [render_project(req, p) for p in found],
                    "links": links(req, "auth/projects")})


def my_domains(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        ids = assignments.target_ids_of(conn, req.who.user.id, "domain")
        found = [d for d in store.list_domains(conn, enabled=True) if d.id in ids]
    return respond({"domains": [render_domain(req, d) for d in found],
                    "links": links(req, "auth/domains")})


def my_system(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        held = assignments.SYSTEM in assignments.target_ids_of(conn, req.who.user.id,
                                                               "system")
    return respond({"system": [{"all": True}] if held else [],
                    "links": links(req, "auth/system")})
