"""Keystone's policy blobs (``/v3/policies``): a type (a media type, say) and a blob,
plus any attributes given, stored for whoever fetches them. Nothing in the identity
service enforces them, as in Keystone. Plain functions over a connection."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stratus.identity import schema as s
from stratus.identity.store import utcnow


@dataclass(frozen=True)
class Policy:
    id: str
    type: str
    blob: str
    extra: Mapping[str, Any] = field(default_factory=dict)


def _policy(row: Any) -> Policy:
    return Policy(row.id, row.type, row.blob, json.loads(row.extra) if row.extra else {})


def _values(policy: Policy) -> dict[str, Any]:
    return {"type": policy.type, "blob": policy.blob,
            "extra": json.dumps(dict(policy.extra)) if policy.extra else None}


def create(conn: Connection, policy: Policy) -> None:
    conn.execute(sa.insert(s.policies).values(id=policy.id, created_at=utcnow(),
                                              **_values(policy)))


def get(conn: Connection, policy_id: str) -> Policy | None:
    p = s.policies
    row = conn.execute(sa.select(p).where(p.c.id == policy_id)).first()
    return _policy(row) if row else None


def listing(conn: Connection, *, type_: str | None = None) -> list[Policy]:
    p = s.policies
    query = sa.select(p).order_by(p.c.created_at, p.c.id)
    if type_ is not None:
        query = query.where(p.c.type == type_)
    return [_policy(r) for r in conn.execute(query)]


def update(conn: Connection, policy: Policy) -> bool:
    p = s.policies
    return bool(conn.execute(sa.update(p).where(p.c.id == policy.id)
                             .values(**_values(policy))).rowcount)


def delete(conn: Connection, policy_id: str) -> bool:
    p = s.policies
    return bool(conn.execute(sa.delete(p).where(p.c.id == policy_id)).rowcount)
