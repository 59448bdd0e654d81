"""build_requests: servers the compute API accepted that no cell holds yet.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "build_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance_uuid", _name(36), nullable=False),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("user_id", _name(255), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_build_requests")),
        sa.UniqueConstraint("instance_uuid", name=op.f("uq_build_requests_instance_uuid")),
    )
    op.create_index(op.f("ix_build_requests_project_id"), "build_requests", ["project_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_build_requests_project_id"), table_name="build_requests")
    op.drop_table("build_requests")
