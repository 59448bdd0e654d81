"""Tags on any resource (the standard-attr-tag extension): ``/v2.0/<collection>/<id>/tags``.

Tags are kept by resource id; the handlers check that the resource exists and that the
caller may change it. Lists filter by ``tags``, ``tags-any``, ``not-tags`` and
``not-tags-any`` (comma-separated), as Neutron does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.network import errors
from stratus.network import schema as s

MAX_TAG = 255
TAG_FILTERS = ("tags", "tags-any", "not-tags", "not-tags-any")


def of(conn: Connection, ids: Iterable[str]) -> dict[str, list[str]]:
    wanted = sorted(set(ids))
    out: dict[str, list[str]] = {i: [] for i in wanted}
    if wanted:
        t = s.resource_tags
        for row in conn.execute(sa.select(t).where(t.c.resource_id.in_(wanted))
                                .order_by(t.c.tag)):
            out[row.resource_id].append(row.tag)
    return out


def attach(conn: Connection, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    """Each row with its ``tags``."""
    found = of(conn, (r["id"] for r in rows))
    for row in rows:
        row["tags"] = found.get(row["id"], [])
    return rows


def check(tag: Any) -> str:
    if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG or "," in tag or "/" in tag:
        raise errors.BadRequest(f"Invalid input for tag. Reason: '{tag}' is not a valid "
                                f"tag (1-{MAX_TAG} characters, no ',' or '/').",
                                "HTTPBadRequest")
    return tag


def add(conn: Connection, resource_id: str, tag: str) -> None:
    t = s.resource_tags
    exists = conn.execute(sa.select(t.c.tag).where(t.c.resource_id == resource_id,
                                                   t.c.tag == tag)).first()
    if exists is None:
        conn.execute(sa.insert(t).values(resource_id=resource_id, tag=tag))


def replace(conn: Connection, resource_id: str, tags: Sequence[str]) -> None:
    t = s.resource_tags
    conn.execute(sa.delete(t).where(t.c.resource_id == resource_id))
    if tags:
        conn.execute(sa.insert(t), [{"resource_id": resource_id, "tag": tag}
                                    for tag in sorted(set(tags))])


def remove(conn: Connection, resource_id: str, tag: str) -> None:
    t = s.resource_tags
    gone = conn.execute(sa.delete(t).where(t.c.resource_id == resource_id, t.c.tag == tag))
    if gone.rowcount == 0:
        raise errors.NotFound(f"Tag {tag} could not be found for resource {resource_id}.",
                              "TagNotFound")


def matches(tags: Iterable[str], filters: Mapping[str, Sequence[str]]) -> bool:
    """Whether a resource's tags pass the tag filters of a list."""
    have = set(tags)
    for name in TAG_FILTERS:
        for value in filters.get(name, ()):
            wanted = {t for t in value.split(",") if t}
            if name == "tags" and not wanted <= have:
                return False
            if name == "tags-any" and not wanted & have:
                return False
            if name == "not-tags" and wanted and wanted <= have:
                return False
            if name == "not-tags-any" and wanted & have:
                return False
    return True
