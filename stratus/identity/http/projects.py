"""``/v3/projects``: projects in domains, under parents, with tags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import webob

from stratus.identity import assignments, store
from stratus.identity.http.common import (
    Req,
    conflict,
    extra_of,
    flag,
    forbidden,
    get_domain,
    get_project,
    links,
    no_content,
    not_found,
    render_project,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.storage import engine as db

MAX_TAGS, TAG_MAX = 80, 255
MAX_DEPTH = 5   # Keystone's [DEFAULT] max_project_tree_depth
KNOWN = {"name", "description", "enabled", "domain_id", "parent_id", "is_domain", "tags",
         "options"}


def _tag(value: Any) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= TAG_MAX or "/" in value or \
            "," in value:
        raise IdentityError(400, f"Invalid project tag {value!r}: 1 to {TAG_MAX} "
                            "characters, neither '/' nor ','.")
    return value


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise IdentityError(400, "'tags' must be a list of strings.")
    tags = tuple(dict.fromkeys(_tag(t) for t in value))
    if len(tags) > MAX_TAGS:
        raise IdentityError(400, f"A project has at most {MAX_TAGS} tags.")
    return tags


def _depth(conn: Any, project_id: str) -> int:
    depth, current, seen = 1, store.get_project(conn, project_id), set()
    while current is not None and current.parent_id and current.id not in seen:
        seen.add(current.id)
        depth += 1
        current = store.get_project(conn, current.parent_id)
    return depth


def _may_see(req: Req, conn: Any, project: store.Project) -> bool:
    if req.is_admin:
        return True
    return project.id in assignments.target_ids_of(conn, req.who.user.id, "project")


def create_project(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("project")
    name = text(body, "name", required=True, max_len=store.PROJECT_NAME_MAX)
    assert name is not None
    if body.get("is_domain"):
        raise IdentityError(400, "Projects acting as domains (is_domain) are not served "
                            "here; create a domain (POST /v3/domains) instead.")
    parent_id = text(body, "parent_id", max_len=64)
    with db.write(req.deps.engine) as conn:
        parent = None
        if parent_id is not None and store.get_domain(conn, parent_id) is None:
            parent = store.get_project(conn, parent_id)
            if parent is None:
                raise not_found("project", parent_id)
        domain_id = text(body, "domain_id", max_len=64) or \
            (parent.domain_id if parent else None) or \
            (req.who.project.domain_id if req.who.project else store.DOMAIN_ID)
        get_domain(conn, domain_id)
        if parent_id is not None and parent is None and parent_id != domain_id:
            raise IdentityError(400, "A project's parent is a project of its domain, or "
                                "the domain itself.")
        if parent is not None:
            if parent.domain_id != domain_id:
                raise IdentityError(400, "A project's parent must be in the same domain.")
            if _depth(conn, parent.id) >= MAX_DEPTH:
                raise IdentityError(403, f"A project tree is at most {MAX_DEPTH} deep.")
        try:
            made = store.create_project(
                conn, name, text(body, "description", empty_ok=True, max_len=65_535) or "",
                enabled=flag(body, "enabled") is not False, domain_id=domain_id,
                parent_id=parent.id if parent else None,
                tags=_tags(body.get("tags", [])), extra=extra_of(body, KNOWN))
        except store.IdentityConflict as exc:
            raise conflict("project", exc) from None
        except store.IdentityInputError as exc:
            raise IdentityError(400, str(exc)) from None
    return respond({"project": render_project(req, made)}, 201)


def _tag_filter(req: Req, found: list[store.Project]) -> list[store.Project]:
    for key in ("tags", "tags-any", "not-tags", "not-tags-any"):
        value = req.param(key)
        if value is None:
            continue
        wanted = set(value.split(","))
        if key == "tags":
            found = [p for p in found if wanted <= set(p.tags)]
        elif key == "tags-any":
            found = [p for p in found if wanted & set(p.tags)]
        elif key == "not-tags":
            found = [p for p in found if not wanted <= set(p.tags)]
        else:
            found = [p for p in found if not wanted & set(p.tags)]
    return found


def list_projects(req: Req) -> webob.Response:
    req.require_admin()
    if req.flag_param("is_domain"):
        return respond({"projects": [], "links": links(req, "projects")})
    with db.read(req.deps.engine) as conn:
        found = store.list_projects(conn, name=req.param("name"),
                                    domain_id=req.param("domain_id"),
                                    parent_id=req.param("parent_id"),
                                    enabled=req.flag_param("enabled"))
    return respond({"projects": [render_project(req, p) for p in _tag_filter(req, found)],
                    "links": links(req, "projects")})


def show_project(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        if not _may_see(req, conn, found):
            raise forbidden("only members of a project (and admins) see it")
        body = render_project(req, found)
        if req.param("parents_as_ids") is not None or req.param("parents_as_list") is not None:
            chain: list[store.Project] = []
            parent_id = found.parent_id
            while parent_id and (parent := store.get_project(conn, parent_id)) and \
                    parent not in chain:
                chain.append(parent)
                parent_id = parent.parent_id
            if req.param("parents_as_list") is not None:
                body["parents"] = [{"project": render_project(req, p)} for p in chain]
            else:
                nested: Any = None
                for p in reversed(chain):
                    nested = {p.id: nested}
                body["parents"] = nested
        if req.param("subtree_as_ids") is not None or req.param("subtree_as_list") is not None:
            tree = _subtree(conn, found.id)
            body["subtree"] = [{"project": render_project(req, p)} for p in tree] \
                if req.param("subtree_as_list") is not None else \
                {p.id: None for p in tree} or None
    return respond({"project": body})


def _subtree(conn: Any, project_id: str) -> list[store.Project]:
    found, todo = [], [project_id]
    while todo:
        children = store.list_projects(conn, parent_id=todo.pop())
        found += children
        todo += [c.id for c in children]
    return found


def update_project(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("project")
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = text(body, "name", required=True, max_len=store.PROJECT_NAME_MAX)
    if "description" in body:
        values["description"] = text(body, "description", empty_ok=True,
                                     max_len=65_535) or ""
    if "enabled" in body:
        values["enabled"] = bool(flag(body, "enabled"))
    tags = _tags(body["tags"]) if "tags" in body else None
    with db.write(req.deps.engine) as conn:
        current = get_project(conn, req.args["id"])
        if body.get("domain_id") not in (None, current.domain_id):
            raise IdentityError(400, "A project cannot move to another domain.")
        if "parent_id" in body and body["parent_id"] not in (
                current.parent_id, None if current.parent_id else current.domain_id):
            raise IdentityError(403, "Update of `parent_id` is not allowed.")
        extra = extra_of(body, KNOWN)
        if extra:
            values["extra"] = {**current.extra, **extra}
        try:
            if values:
                store.update_project(conn, current.id, **values)
        except store.IdentityConflict as exc:
            raise conflict("project", exc) from None
        except store.IdentityInputError as exc:
            raise IdentityError(400, str(exc)) from None
        if tags is not None:
            store.set_project_tags(conn, current.id, tags)
        found = get_project(conn, current.id)
    return respond({"project": render_project(req, found)})


def delete_project(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        if store.children_of(conn, found.id):
            raise IdentityError(403, f"Cannot delete project {found.id}: it has child "
                                "projects; delete them first.")
        store.delete_project(conn, found.id)
    return no_content()


# ---- tags ---------------------------------------------------------------------------------

def list_tags(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        if not _may_see(req, conn, found):
            raise forbidden("only members of a project (and admins) see its tags")
    return respond({"tags": list(found.tags)})


def replace_tags(req: Req) -> webob.Response:
    req.require_admin()
    body = req.body()
    if not isinstance(body, Mapping) or "tags" not in body:
        raise IdentityError(400, "The request body must be {\"tags\": [...]}.")
    tags = _tags(body["tags"])
    with db.write(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        store.set_project_tags(conn, found.id, tags)
    return respond({"tags": list(tags)})


def delete_tags(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        store.set_project_tags(conn, found.id, ())
    return no_content()


def check_tag(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        if not _may_see(req, conn, found):
            raise forbidden("only members of a project (and admins) see its tags")
    if req.args["tag"] not in found.tags:
        raise not_found("project tag", req.args["tag"])
    return no_content()


def add_tag(req: Req) -> webob.Response:
    req.require_admin()
    tag = _tag(req.args["tag"])
    with db.write(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        if tag not in found.tags:
            if len(found.tags) >= MAX_TAGS:
                raise IdentityError(400, f"A project has at most {MAX_TAGS} tags.")
            store.set_project_tags(conn, found.id, (*found.tags, tag))
    resp = webob.Response(status=201, content_type=None)
    resp.content_length = 0
    resp.headers["Location"] = f"{req.url}/projects/{found.id}/tags/{tag}"
    return resp


def delete_tag(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        found = get_project(conn, req.args["id"])
        if req.args["tag"] not in found.tags:
            raise not_found("project tag", req.args["tag"])
        store.set_project_tags(conn, found.id,
                               tuple(t for t in found.tags if t != req.args["tag"]))
    return no_content()
