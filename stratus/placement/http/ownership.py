"""Policy checks that depend on whose provider tree a request touches.

A rule may name ``%(root_provider_name)s`` (the default
``compute_own_provider_api`` does: a ``compute`` caller passes on a provider
whose tree's root is named as its user). Finding that name costs a read, so a
handler first asks the policy with the usual target; only when that refuses
does it look the provider up and ask again with ``root_provider_name`` and
``resource_provider_uuid`` in the target. An admin or service caller therefore
pays nothing. A refusal after the lookup is logged at WARNING, naming the user
and the provider: a compute host that reaches for another host's provider is
either misconfigured or compromised.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stratus.placement import errors
from stratus.placement.http.wsgi import Req
from stratus.placement.store import providers
from stratus.storage import engine as db


def target(req: Req, root_name: str, uuid: str | None) -> dict[str, Any]:
    """The policy target of ``uuid`` (None: any) in the tree rooted at ``root_name``."""
    return {"project_id": req.ctx.project_id, "user_id": req.ctx.user_id,
            "root_provider_name": root_name, "resource_provider_uuid": uuid}


def refuse(req: Req, action: str, what: str) -> errors.Forbidden:
    return req.refusal(action, f" on {what}")


def authorize_tree(req: Req, action: str, root_name: str, uuid: str | None) -> None:
    """Allowed on a provider (``uuid``, or one being created) in the tree rooted at
    ``root_name``, or Forbidden (logged)."""
    if not req.allows(action, target(req, root_name, uuid)):
        raise refuse(req, action, f"resource provider {uuid or '(new)'} "
                                  f"in the tree of {root_name!r}")


def authorize_provider(req: Req, action: str, uuid: str | None = None) -> bool:
    """``action`` on the provider ``uuid`` (default: the path's): allowed, or Forbidden.

    A provider that does not exist is 404, as the handler would answer, to a caller
    that may read providers (existence is no secret to it); 403 to anyone else.
    True when the decision needed the provider's tree: a handler that can move the
    provider to another tree then checks the tree it ends in too."""
    if req.allows(action):
        return False
    uuid = req.arg("uuid") if uuid is None else uuid
    if req.ctx.user_name is None:
        raise refuse(req, action, f"resource provider {uuid}")
    with db.read(req.app.engine) as conn:
        try:
            provider = providers.get(conn, uuid)
        except errors.NotFound:
            if req.allows("placement:resource_providers:show"):
                raise
            raise refuse(req, action, f"resource provider {uuid}") from None
        root = providers.root_name(conn, provider)
    authorize_tree(req, action, root, provider["uuid"])
    return True


def tree_of(conn: Connection, req: Req, action: str, uuid: str) -> str:
    """The root name of the tree of provider ``uuid``, for a caller refused without
    one; a missing provider is refused (403), not looked up for it."""
    found = providers.find(conn, uuid)
    if found is None:
        raise refuse(req, action, f"resource provider {uuid}")
    return providers.root_name(conn, found)
