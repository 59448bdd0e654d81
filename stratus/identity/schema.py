"""The identity database: projects, users, roles, who has which role where, and the
tokens revoked before they expired. One domain, ``default``, as a fresh Keystone has."""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()

projects = sa.Table(
    "projects", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(64), nullable=False),
    sa.Column("domain_id", columns.name(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    *columns.timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

users = sa.Table(
    "users", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(255), nullable=False),
    sa.Column("domain_id", columns.name(64), nullable=False),
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("default_project_id", columns.name(64), nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    *columns.timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

roles = sa.Table(
    "roles", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(255), nullable=False, unique=True),
)

assignments = sa.Table(
    "assignments", metadata,
    sa.Column("user_id", columns.name(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("project_id", columns.name(64),
              sa.ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role_id", columns.name(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
)

revocations = sa.Table(
    "revocations", metadata,
    sa.Column("audit_id", columns.name(64), primary_key=True),
    sa.Column("expires_at", sa.DateTime, nullable=False, index=True),
)
