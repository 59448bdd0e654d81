"""os-aggregates bodies: ``uuid`` from 2.41; a create answers without ``hosts`` and
``metadata`` (it has none yet), as Nova's does."""

from __future__ import annotations

from typing import Any

from stratus.api.http.views.services import nova_time
from stratus.api.http.wsgi import Req
from stratus.api.store.aggregates import Aggregate


def aggregate(req: Req, a: Aggregate, created: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"id": a.id, "name": a.name,
                            "availability_zone": a.availability_zone}
    if req.want.supports("aggregate_uuid"):
        body["uuid"] = a.uuid
    if not created:
        body.update({"hosts": list(a.hosts), "metadata": dict(a.metadata)})
    body.update({"created_at": nova_time(a.created_at), "updated_at": nova_time(a.updated_at),
                 "deleted": False, "deleted_at": None})
    return body
