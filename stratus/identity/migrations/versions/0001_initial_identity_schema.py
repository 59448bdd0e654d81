"""The identity database: projects, users, roles, assignments, revoked tokens.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("name", _name(64), nullable=False),
        sa.Column("domain_id", _name(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("domain_id", "name", name=op.f("uq_projects_domain_id_name")),
    )
    op.create_table(
        "users",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        sa.Column("domain_id", _name(64), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("default_project_id", _name(64), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("domain_id", "name", name=op.f("uq_users_domain_id_name")),
    )
    op.create_table(
        "roles",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_roles")),
        sa.UniqueConstraint("name", name=op.f("uq_roles_name")),
    )
    op.create_table(
        "assignments",
        sa.Column("user_id", _name(64), nullable=False),
        sa.Column("project_id", _name(64), nullable=False),
        sa.Column("role_id", _name(64), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE",
                                name=op.f("fk_assignments_user_id_users")),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE",
                                name=op.f("fk_assignments_project_id_projects")),
        sa.ForeignKeyConstraint(["role_id"], ["roles.id"], ondelete="CASCADE",
                                name=op.f("fk_assignments_role_id_roles")),
        sa.PrimaryKeyConstraint("user_id", "project_id", "role_id",
                                name=op.f("pk_assignments")),
    )
    op.create_table(
        "revocations",
        sa.Column("audit_id", _name(64), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("audit_id", name=op.f("pk_revocations")),
    )
    op.create_index(op.f("ix_revocations_expires_at"), "revocations", ["expires_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_revocations_expires_at"), table_name="revocations")
    for table in ("revocations", "assignments", "roles", "users", "projects"):
        op.drop_table(table)
