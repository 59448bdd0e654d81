"""scheduling_decisions: the last scheduling decisions, for the console.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "scheduling_decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("instance_uuid", _name(36), nullable=False),
        sa.Column("num_instances", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("flavor", _name(255), nullable=True),
        sa.Column("project_id", _name(255), nullable=True),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("hosts", sa.Text(), nullable=True),
        sa.Column("alternates", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduling_decisions")),
    )


def downgrade() -> None:
    op.drop_table("scheduling_decisions")
