"""``/v3/roles`` (global and domain-specific roles, and which roles imply which), the
grants of roles to users and groups on projects, domains and the system, and
``/v3/role_assignments``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import webob

from stratus.identity import assignments, groups, store
from stratus.identity.assignments import Assignment
from stratus.identity.http.common import (
    Req,
    conflict,
    get_domain,
    get_project,
    get_role,
    get_user,
    links,
    no_content,
    not_found,
    render_role,
    respond,
    text,
)
from stratus.identity.http.errors import IdentityError
from stratus.storage import engine as db

# ---- roles ----------------------------------------------------------------------------


def list_roles(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        found = store.list_roles(conn, name=req.param("name"),
                                 domain_id=req.param("domain_id"))
    return respond({"roles": [render_role(req, r) for r in found],
                    "links": links(req, "roles")})


def show_role(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        return respond({"role": render_role(req, get_role(conn, req.args["id"]))})


def create_role(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("role")
    name = text(body, "name", required=True)
    assert name is not None
    with db.write(req.deps.engine) as conn:
        domain_id = text(body, "domain_id", max_len=64)
        if domain_id is not None:
            get_domain(conn, domain_id)
        try:
            made = store.create_role(conn, name, domain_id=domain_id,
                                     description=text(body, "description", empty_ok=True,
                                                      max_len=65_535))
        except store.IdentityConflict as exc:
            raise conflict("role", exc) from None
    return respond({"role": render_role(req, made)}, 201)


def update_role(req: Req) -> webob.Response:
    req.require_admin()
    body = req.member("role")
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = text(body, "name", required=True)
    if "description" in body:
        values["description"] = text(body, "description", empty_ok=True, max_len=65_535)
    with db.write(req.deps.engine) as conn:
        current = get_role(conn, req.args["id"])
        if body.get("domain_id", current.domain_id) != current.domain_id:
            raise IdentityError(400, "A role cannot move to another domain.")
        try:
            if values:
                store.update_role(conn, current.id, **values)
        except store.IdentityConflict as exc:
            raise conflict("role", exc) from None
        found = get_role(conn, current.id)
    return respond({"role": render_role(req, found)})


def delete_role(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        if not store.delete_role(conn, get_role(conn, req.args["id"]).id):
            raise not_found("role", req.args["id"])
    return no_content()


# ---- implied roles ----------------------------------------------------------------------------

def _brief(req: Req, r: store.Role) -> dict[str, Any]:
    return {"id": r.id, "name": r.name, "links": {"self": f"{req.url}/roles/{r.id}"}}


def _inference(req: Req, prior: store.Role, implied: list[store.Role]) -> dict[str, Any]:
    return {"prior_role": _brief(req, prior), "implies": [_brief(req, r) for r in implied]}


def _pair(req: Req, conn: Any) -> tuple[store.Role, store.Role]:
    return get_role(conn, req.args["prior"]), get_role(conn, req.args["implied"])


def add_implied(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        prior, implied = _pair(req, conn)
        if prior.domain_id is None and implied.domain_id is not None:
            raise IdentityError(403, "A global role cannot imply a domain-specific role.")
        if prior.id in assignments.expand_implied(conn, {implied.id}):
            raise IdentityError(403, "That implication would make a loop.")
        store.add_implied(conn, prior.id, implied.id)
    body = {"role_inference": {"prior_role": _brief(req, prior),
                               "implies": _brief(req, implied)},
            "links": {"self": f"{req.url}/roles/{prior.id}/implies/{implied.id}"}}
    return respond(body, 201)


def show_implied(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        prior, implied = _pair(req, conn)
        if implied.id not in assignments.implies(conn).get(prior.id, set()):
            raise not_found("implied role", f"{prior.id} implies {implied.id}")
    if req.webob.method == "HEAD":
        return no_content()
    return respond({"role_inference": {"prior_role": _brief(req, prior),
                                       "implies": _brief(req, implied)},
                    "links": {"self": f"{req.url}/roles/{prior.id}/implies/{implied.id}"}})


def remove_implied(req: Req) -> webob.Response:
    req.require_admin()
    with db.write(req.deps.engine) as conn:
        prior, implied = _pair(req, conn)
        if not store.remove_implied(conn, prior.id, implied.id):
            raise not_found("implied role", f"{prior.id} implies {implied.id}")
    return no_content()


def list_implied(req: Req) -> webob.Response:
    with db.read(req.deps.engine) as conn:
        prior = get_role(conn, req.args["prior"])
        ids = sorted(assignments.implies(conn).get(prior.id, set()))
        implied = store.list_roles(conn, ids=ids) if ids else []
    return respond({"role_inference": _inference(req, prior, implied),
                    "links": {"self": f"{req.url}/roles/{prior.id}/implies"}})


def role_inferences(req: Req) -> webob.Response:
    req.require_admin()
    with db.read(req.deps.engine) as conn:
        graph = assignments.implies(conn)
        every = {r.id: r for r in store.list_roles(conn, ids=sorted(
            set(graph) | {i for v in graph.values() for i in v}))} if graph else {}
    return respond({"role_inferences": [
        _inference(req, every[prior], [every[i] for i in sorted(implied)])
        for prior, implied in sorted(graph.items())],
        "links": {"self": f"{req.url}/role_inferences"}})


# ---- grants: /v3/{projects,domains,system}/.../{users,groups}/{id}/roles[/{role}] ----------------

def _target(req: Req, conn: Any, target_type: str) -> str:
    if target_type == "project":
        return get_project(conn, req.args["target"]).id
    if target_type == "domain":
        return get_domain(conn, req.args["target"]).id
    return assignments.SYSTEM


def _actor(req: Req, conn: Any, actor_type: str) -> str:
    if actor_type == "user":
        return get_user(conn, req.args["actor"]).id
    found = groups.get(conn, req.args["actor"])
    if found is None:
        raise not_found("group", req.args["actor"])
    return found.id


def _grant_of(req: Req, conn: Any, target_type: str, actor_type: str,
              inherited: bool = False) -> Assignment:
    role = get_role(conn, req.args["role"])
    return Assignment(actor_type, _actor(req, conn, actor_type), target_type,
                      _target(req, conn, target_type), role.id, inherited)


def grants(target_type: str, actor_type: str, inherited: bool = False
           ) -> dict[str, dict[str, Callable[[Req], webob.Response]]]:
    """The handlers of one kind of grant: the list, and put/check/delete of one."""

    def list_(req: Req) -> webob.Response:
        _may_read(req, actor_type)
        with db.read(req.deps.engine) as conn:
            target, actor = _target(req, conn, target_type), _actor(req, conn, actor_type)
            found = assignments.query(conn, actor_type=actor_type, actor_id=actor,
                                      target_type=target_type, target_id=target,
                                      inherited=inherited)
            roles = store.list_roles(conn, ids=[a.role_id for a in found]) if found else []
        return respond({"roles": [render_role(req, r) for r in roles],
                        "links": links(req, req.webob.path_info.split("/v3/", 1)[-1])})

    def put(req: Req) -> webob.Response:
        req.require_admin()
        with db.write(req.deps.engine) as conn:
            assignments.add(conn, _grant_of(req, conn, target_type, actor_type, inherited))
        return no_content()

    def check(req: Req) -> webob.Response:
        _may_read(req, actor_type)
        with db.read(req.deps.engine) as conn:
            if not assignments.exists(conn, _grant_of(req, conn, target_type, actor_type,
                                                      inherited)):
                raise not_found("role assignment", req.args["role"])
        return no_content()

    def delete(req: Req) -> webob.Response:
        req.require_admin()
        with db.write(req.deps.engine) as conn:
            if not assignments.remove(conn, _grant_of(req, conn, target_type, actor_type,
                                                      inherited)):
                raise not_found("role assignment", req.args["role"])
        return no_content()

    return {"list": {"GET": list_}, "one": {"PUT": put, "GET": check, "DELETE": delete}}


def _may_read(req: Req, actor_type: str) -> None:
    if actor_type == "user" and req.args.get("actor") == req.who.user.id:
        return
    req.require_admin()


# ---- /v3/role_assignments ------------------------------------------------------------------

class _Names:
    """Names for ``include_names``: users, groups, projects and domains with their
    domains, roles (looked up once each)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._domains: dict[str, dict[str, str]] = {}

    def domain(self, domain_id: str) -> dict[str, str]:
        if domain_id not in self._domains:
            found = store.get_domain(self.conn, domain_id)
            self._domains[domain_id] = {"id": domain_id,
                                        "name": found.name if found else domain_id}
        return self._domains[domain_id]

    def actor(self, kind: str, actor_id: str) -> dict[str, Any]:
        found = store.get_user(self.conn, actor_id) if kind == "user" else \
            groups.get(self.conn, actor_id)
        if found is None:
            return {"id": actor_id}
        return {"id": actor_id, "name": found.name, "domain": self.domain(found.domain_id)}

    def target(self, kind: str, target_id: str) -> dict[str, Any]:
        if kind == "project":
            found = store.get_project(self.conn, target_id)
            return {"id": target_id, "name": found.name,
                    "domain": self.domain(found.domain_id)} if found else {"id": target_id}
        return {"id": target_id, "name": self.domain(target_id)["name"]}

    def role(self, role_id: str) -> dict[str, Any]:
        found = store.find_role(self.conn, role_id)
        if found is None:
            return {"id": role_id}
        body: dict[str, Any] = {"id": role_id, "name": found.name}
        if found.domain_id:
            body["domain"] = self.domain(found.domain_id)
        return body


def _render_assignment(req: Req, a: Assignment, names: _Names | None,
                       via_group: str | None = None, prior: str | None = None
                       ) -> dict[str, Any]:
    actor: dict[str, Any] = names.actor(a.actor_type, a.actor_id) if names else \
        {"id": a.actor_id}
    if a.target_type == "system":
        scope: dict[str, Any] = {"system": {"all": True}}
    else:
        scope = {a.target_type: names.target(a.target_type, a.target_id) if names
                 else {"id": a.target_id}}
    role = names.role(a.role_id) if names else {"id": a.role_id}
    path = ("system" if a.target_type == "system"
            else f"{a.target_type}s/{a.target_id}") + f"/{a.actor_type}s/{a.actor_id}" \
        f"/roles/{a.role_id}"
    if a.inherited:
        scope["OS-INHERIT:inherited_to"] = "projects"
    link: dict[str, str] = {"assignment": f"{req.url}/{path}"}
    if via_group is not None:
        link = {"assignment": f"{req.url}/" + path.replace(
            f"users/{a.actor_id}", f"groups/{via_group}"),
            "membership": f"{req.url}/groups/{via_group}/users/{a.actor_id}"}
    if prior is not None:
        link["prior_role"] = f"{req.url}/roles/{prior}"
    return {"role": role, a.actor_type: actor, "scope": scope, "links": link}


def _scope_filter(req: Req) -> tuple[str | None, str | None]:
    for kind in ("project", "domain"):
        if req.param(f"scope.{kind}.id") is not None:
            return kind, req.param(f"scope.{kind}.id")
    if req.param("scope.system") is not None:
        return "system", assignments.SYSTEM
    return None, None


Row = tuple[Assignment, str | None, str | None]   # assignment, via group, prior role


def _effective(conn: Any, found: list[Assignment], user_id: str | None,
               target: tuple[str | None, str | None]) -> list[Row]:
    """Keystone's ``effective`` view: group assignments become their members', inherited
    ones land on the projects below, implied roles are added, and domain-specific
    roles (which no token carries) drop out."""
    target_type, target_id = target
    rows: list[Row] = []
    for a in found:
        if a.inherited:
            below = _projects_below(conn, a.target_type, a.target_id)
            places = [("project", p) for p in below]
        else:
            places = [(a.target_type, a.target_id)]
        places = [(t, i) for t, i in places
                  if target_type in (None, t) and target_id in (None, i)]
        members = [a.actor_id] if a.actor_type == "user" else \
            [m for m in groups.members(conn, a.actor_id) if user_id in (None, m)]
        for kind, place in places:
            for member in members:
                via = a.actor_id if a.actor_type == "group" else None
                rows.append((Assignment("user", member, kind, place, a.role_id), via, None))
    expanded: list[Row] = []
    for a, via, _ in rows:
        expanded.append((a, via, None))
        for implied in sorted(assignments.expand_implied(conn, {a.role_id}) - {a.role_id}):
            expanded.append((Assignment(a.actor_type, a.actor_id, a.target_type,
                                        a.target_id, implied), via, a.role_id))
    domain_roles = {r.id for r in store.list_roles(conn, ids=sorted(
        {a.role_id for a, _, _ in expanded})) if r.domain_id is not None} if expanded else set()
    return [row for row in expanded if row[0].role_id not in domain_roles]


def _projects_below(conn: Any, target_type: str, target_id: str) -> list[str]:
    if target_type == "domain":
        return [p.id for p in store.list_projects(conn, domain_id=target_id)]
    found, todo = [], [target_id]
    while todo:
        children = store.children_of(conn, todo.pop())
        found += children
        todo += children
    return found


def role_assignments(req: Req) -> webob.Response:
    user_id, group_id = req.param("user.id"), req.param("group.id")
    if not req.is_admin and user_id != req.who.user.id:
        raise IdentityError(403, "You are not authorized to perform the requested action: "
                            "listing others' role assignments needs the admin role.")
    target = _scope_filter(req)
    effective = req.param("effective") is not None
    role_id = req.param("role.id")
    with db.read(req.deps.engine) as conn:
        actor_type = "user" if user_id else ("group" if group_id else None)
        if effective:
            found = assignments.query(conn, actor_type=actor_type,
                                      actor_id=user_id or group_id)
            if user_id:
                found += assignments.query(conn, actor_type="group",
                                           actor_ids=assignments.groups_of(conn, user_id))
            rows = _effective(conn, found, user_id, target)
        else:
            rows = [(a, None, None) for a in assignments.query(
                conn, actor_type=actor_type, actor_id=user_id or group_id,
                target_type=target[0], target_id=target[1])]
        names = _Names(conn) if req.param("include_names") is not None else None
        out = [_render_assignment(req, a, names, via, prior) for a, via, prior in rows
               if role_id in (None, a.role_id)]
    return respond({"role_assignments": out, "links": links(req, "role_assignments")})
