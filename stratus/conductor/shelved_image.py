"""The snapshot a shelve leaves in the image service (Nova's ``<name>-shelved`` image):
its id is kept in the server's system metadata (``shelved_image_id``, with
``shelved_at`` and ``shelved_host``) while the server is shelved, and the image is
deleted once the server runs again, as Nova's conductor does after an unshelve."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from stratus.cells.services import utcnow
from stratus.image.client import ImageClientError

if TYPE_CHECKING:
    from stratus.conductor.build import ConductorContext

LOG = logging.getLogger(__name__)
KEYS = ("shelved_image_id", "shelved_at", "shelved_host")


def _sysmeta(row: dict[str, Any]) -> dict[str, Any]:
    try:
        return dict(json.loads(row.get("system_metadata") or "{}"))
    except ValueError:
        return {}


def remember(row: dict[str, Any], image_id: str | None) -> dict[str, Any]:
    """The instance values that record the shelve (and its image, if there is one)."""
    meta = _sysmeta(row)
    meta.update({"shelved_at": utcnow().isoformat(), "shelved_host": row.get("host") or ""})
    if image_id is not None:
        meta["shelved_image_id"] = image_id
    return {"system_metadata": json.dumps(meta, sort_keys=True)}


def forget(ctx: ConductorContext, row: dict[str, Any]) -> dict[str, Any]:
    """The server runs again: its shelved image is deleted (best effort: one that
    cannot be deleted now stays, named ``<name>-shelved``), the keys dropped."""
    meta = _sysmeta(row)
    image_id = meta.get("shelved_image_id")
    if image_id and ctx.image is not None:
        try:
            ctx.image.delete(str(image_id))
        except ImageClientError as exc:
            if exc.status != 404:
                LOG.warning("unshelve of %s: its shelved image %s was not deleted: %s",
                            row.get("uuid"), image_id, exc)
    for key in KEYS:
        meta.pop(key, None)
    return {"system_metadata": json.dumps(meta, sort_keys=True)}
