"""A zone manager's local store (SQLite by default): what it knows, and nothing of any
other zone's tables (design document 003: local data stores, no shared database).

* ``children``: the zones under this one, registered by an operator, with the last
  capabilities each posted and when (entries expire when a child stops posting);
* ``requests``: boots this zone accepted as the origin, until each ends (done or
  failed with a reason), with the ranked hosts and the attempt in progress: a
  restarted manager finishes what it acknowledged;
* ``server_locations``: which leaf zone holds each server booted through this zone
  (as cell mappings say which cell holds a server), so lookups and deletes are routed;
* ``seen_messages``: the ids of the signed requests this zone accepted within the
  freshness window, so a replay is refused across restarts too.
"""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()

children = sa.Table(
    "children",
    metadata,
    sa.Column("name", columns.name(255), primary_key=True),
    sa.Column("capabilities", sa.Text, nullable=True),       # JSON, the schema's
    sa.Column("received_at", sa.Float, nullable=True),       # Unix time of the last post
    *columns.timestamps(),
)

requests = sa.Table(
    "requests",
    metadata,
    sa.Column("uuid", columns.name(36), primary_key=True),   # the server's uuid
    sa.Column("body", sa.Text, nullable=False),              # JSON: the boot
    sa.Column("state", sa.String(16), nullable=False),       # pending, done, failed
    sa.Column("result", sa.Text, nullable=True),             # JSON: where, or why not
    # The ranked hosts chosen, and which one is being tried: a restarted origin goes on
    # from there (a build is idempotent by uuid) rather than selecting anew, which could
    # put the same server in two zones.
    sa.Column("plan", sa.Text, nullable=True),                 # JSON: candidates
    sa.Column("attempt", sa.Integer, nullable=False, server_default="0"),
    sa.Column("cancelled", sa.Boolean, nullable=False, server_default=sa.false()),
    # The boots of one API request (a multi-create) share a batch: they are placed
    # together, all or none, and a retried request finds them by it.
    sa.Column("batch", columns.name(64), nullable=True, index=True),
    sa.Column("position", sa.Integer, nullable=False, server_default="0"),
    *columns.timestamps(),
)

server_locations = sa.Table(
    "server_locations",
    metadata,
    sa.Column("server_uuid", columns.name(36), primary_key=True),
    # "child/.../leaf": the zones from this one's child down to the leaf holding it.
    sa.Column("route", columns.name(255), nullable=False, index=True),
    sa.Column("host", columns.name(255), nullable=False),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    *columns.timestamps(),
)

seen_messages = sa.Table(
    "seen_messages",
    metadata,
    sa.Column("receiver", columns.name(255), primary_key=True),
    sa.Column("msg_id", columns.name(64), primary_key=True),
    sa.Column("sent_at", sa.Float, nullable=False, index=True),
)
