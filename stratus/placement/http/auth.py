"""Who is calling: Placement's ``noauth2`` rules, or headers set by keystonemiddleware.

noauth2: every request but ``GET /`` needs ``X-Auth-Token``. The token is
``user[:project]`` (project defaults to the user). The ``admin`` user gets the
admin role unless ``X-Roles`` says otherwise; ``X-Roles`` sets roles for any
user; ``OpenStack-System-Scope`` makes the token system scoped (no project).

keystone: keystonemiddleware's auth_token has already validated the token and
set ``X-User-Id``, ``X-User-Name``, ``X-Project-Id``, ``X-Roles`` and friends; we only
read them. (Under noauth2 the user name is ``X-User-Name``, else the token's user part:
a claim like the rest; Stratus's identity middleware sets it from a validated token.)
"""

from __future__ import annotations

from collections.abc import Mapping

from stratus.placement.http.errors import HTTPError
from stratus.placement.http.wsgi import Context


def _roles(value: str | None) -> list[str]:
    return [r.strip() for r in (value or "").split(",") if r.strip()]


def noauth_context(headers: Mapping[str, str], request_id: str | None) -> Context:
    token = headers.get("X-Auth-Token")
    if token is None:
        raise HTTPError(401, "This server could not verify that you are authorized to "
                             "access the document you requested.")
    user_id, _, project_id = token.partition(":")
    project_id = project_id or user_id
    if "X-Roles" in headers:
        roles = _roles(headers["X-Roles"])
    elif user_id == "admin":
        roles = ["admin"]
    else:
        roles = []
    system_scope = headers.get("OpenStack-System-Scope") or None
    return Context(
        user_id=user_id,
        project_id=headers.get("X-Project-Id") or (None if system_scope else project_id),
        roles=roles,
        system_scope=system_scope,
        request_id=request_id,
        user_name=headers.get("X-User-Name") or user_id,
    )


def keystone_context(headers: Mapping[str, str], request_id: str | None) -> Context:
    user_id = headers.get("X-User-Id") or headers.get("X-User")
    if not user_id:
        raise HTTPError(401, "The request you have made requires authentication.")
    return Context(
        user_id=user_id,
        project_id=headers.get("X-Project-Id") or headers.get("X-Tenant-Id"),
        roles=_roles(headers.get("X-Roles")),
        system_scope=headers.get("OpenStack-System-Scope") or headers.get("X-System-Scope"),
        request_id=request_id,
        user_name=headers.get("X-User-Name") or None,
    )
