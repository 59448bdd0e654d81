"""The identity database: domains, projects (with parents and tags), users, groups,
roles (and which imply which), role assignments on projects, domains and the system,
the service catalog (services, endpoints, regions), application credentials with their
access rules, credentials (EC2 and others), and what revoked tokens.

Role assignments are one table for every kind of actor (user, group) and target
(project, domain, system), as Keystone's ``assignment`` table is; their rows are removed
with the actor, target or role they name (``store.forget_*``), since a column naming
either a user or a group cannot carry a foreign key."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from stratus.storage import columns

metadata = columns.new_metadata()


def _precise_time() -> sa.DateTime:
    """A timestamp kept to the microsecond (MariaDB's DATETIME drops fractions)."""
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


domains = sa.Table(
    "domains", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(64), nullable=False, unique=True),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    *columns.timestamps(),
)

projects = sa.Table(
    "projects", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(64), nullable=False),
    sa.Column("domain_id", columns.name(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    *columns.timestamps(),
    sa.Column("parent_id", columns.name(64), nullable=True, index=True),
    sa.Column("extra", sa.Text, nullable=True),   # JSON: attributes Keystone keeps as given
    sa.UniqueConstraint("domain_id", "name"),
)

project_tags = sa.Table(
    "project_tags", metadata,
    sa.Column("project_id", columns.name(64), sa.ForeignKey("projects.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("name", columns.name(255), primary_key=True),
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
    sa.Column("extra", sa.Text, nullable=True),
    sa.UniqueConstraint("domain_id", "name"),
)

groups = sa.Table(
    "groups", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(64), nullable=False),
    sa.Column("domain_id", columns.name(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False, default=""),
    *columns.timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

group_members = sa.Table(
    "group_members", metadata,
    sa.Column("group_id", columns.name(64), sa.ForeignKey("groups.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("user_id", columns.name(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True, index=True),
)

# domain_id "" is a global role (a NOT NULL column, so the unique constraint holds).
roles = sa.Table(
    "roles", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(255), nullable=False),
    sa.Column("domain_id", columns.name(64), nullable=False, default=""),
    sa.Column("description", sa.Text, nullable=True),
    sa.UniqueConstraint("name", "domain_id"),
)

implied_roles = sa.Table(
    "implied_roles", metadata,
    sa.Column("prior_role_id", columns.name(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("implied_role_id", columns.name(64),
              sa.ForeignKey("roles.id", ondelete="CASCADE"), primary_key=True),
)

# actor_type: user, group; target_type: project, domain, system (target_id "all").
role_assignments = sa.Table(
    "role_assignments", metadata,
    sa.Column("actor_type", columns.name(8), primary_key=True),
    sa.Column("actor_id", columns.name(64), primary_key=True, index=True),
    sa.Column("target_type", columns.name(8), primary_key=True),
    sa.Column("target_id", columns.name(64), primary_key=True, index=True),
    sa.Column("role_id", columns.name(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("inherited", sa.Boolean, primary_key=True, default=False),
)

revocations = sa.Table(
    "revocations", metadata,
    sa.Column("audit_id", columns.name(64), primary_key=True),
    sa.Column("expires_at", sa.DateTime, nullable=False, index=True),
)

# Every token of the user issued at or before ``issued_before`` is revoked (a password
# change, as Keystone revokes by user).
user_revocations = sa.Table(
    "user_revocations", metadata,
    sa.Column("user_id", columns.name(64), primary_key=True),
    sa.Column("issued_before", sa.DateTime, nullable=False),
)

# ---- the catalog ----------------------------------------------------------------------

regions = sa.Table(
    "regions", metadata,
    sa.Column("id", columns.name(255), primary_key=True),
    sa.Column("description", sa.Text, nullable=False, default=""),
    sa.Column("parent_region_id", columns.name(255), nullable=True),
)

services = sa.Table(
    "services", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("type", columns.name(255), nullable=False, index=True),
    sa.Column("name", columns.name(255), nullable=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
)

endpoints = sa.Table(
    "endpoints", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("service_id", columns.name(64), sa.ForeignKey("services.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("interface", columns.name(8), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("region_id", columns.name(255), nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
)

# ---- application credentials and credentials ----------------------------------------------

application_credentials = sa.Table(
    "application_credentials", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("name", columns.name(255), nullable=False),
    sa.Column("user_id", columns.name(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("project_id", columns.name(64), nullable=True),
    sa.Column("secret_hash", sa.String(255), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("expires_at", _precise_time(), nullable=True),
    sa.Column("unrestricted", sa.Boolean, nullable=False, default=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.UniqueConstraint("user_id", "name"),
)

application_credential_roles = sa.Table(
    "application_credential_roles", metadata,
    sa.Column("application_credential_id", columns.name(64),
              sa.ForeignKey("application_credentials.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("role_id", columns.name(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
)

access_rules = sa.Table(
    "access_rules", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("user_id", columns.name(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("service", columns.name(64), nullable=False),
    sa.Column("path", columns.name(225), nullable=False),
    sa.Column("method", columns.name(16), nullable=False),
    sa.UniqueConstraint("user_id", "service", "path", "method"),
)

application_credential_access_rules = sa.Table(
    "application_credential_access_rules", metadata,
    sa.Column("application_credential_id", columns.name(64),
              sa.ForeignKey("application_credentials.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("access_rule_id", columns.name(64), sa.ForeignKey("access_rules.id"),
              primary_key=True, index=True),
)

# The blob is encrypted with the credential keys ([identity] credential_key_file).
credentials = sa.Table(
    "credentials", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("user_id", columns.name(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("project_id", columns.name(64), nullable=True),
    sa.Column("type", columns.name(255), nullable=False),
    sa.Column("encrypted_blob", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

# Keystone's policy API (``/v3/policies``): blobs kept for other services to fetch; the
# identity service itself never reads them, as in Keystone.
policies = sa.Table(
    "policies", metadata,
    sa.Column("id", columns.name(64), primary_key=True),
    sa.Column("type", columns.name(255), nullable=False),
    sa.Column("blob", sa.Text, nullable=False),
    sa.Column("extra", sa.Text, nullable=True),   # JSON: attributes Keystone keeps as given
    sa.Column("created_at", sa.DateTime, nullable=False),
)
