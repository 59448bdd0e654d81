"""os-server-groups bodies: ``project_id`` and ``user_id`` from 2.13; ``policy`` and
``rules`` from 2.64 (``policies`` and ``metadata`` before)."""

from __future__ import annotations

from typing import Any

from stratus.api.http.wsgi import Req
from stratus.api.store.server_groups import ServerGroup


def server_group(req: Req, g: ServerGroup) -> dict[str, Any]:
    body: dict[str, Any] = {"id": g.uuid, "name": g.name}
    if req.want.supports("server_group_policy"):
        body["policy"] = g.policy
        body["rules"] = ({"max_server_per_host": g.max_server_per_host}
                         if g.max_server_per_host else {})
    else:
        body["policies"] = [g.policy]
        body["metadata"] = {}
    body["members"] = list(g.members)
    if req.want.supports("server_group_owner"):
        body.update({"project_id": g.project_id, "user_id": g.user_id})
    return body
