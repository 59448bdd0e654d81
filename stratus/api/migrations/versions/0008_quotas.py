"""quotas, quota_classes: per-project and per-class quota limits.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def _limits(table: str, owner: str) -> None:
    op.create_table(
        table,
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(owner, _name(255), nullable=False),
        sa.Column("resource", _name(255), nullable=False),
        sa.Column("hard_limit", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
        sa.UniqueConstraint(owner, "resource", name=op.f(f"uq_{table}_{owner}_resource")),
    )


def upgrade() -> None:
    _limits("quotas", "project_id")
    _limits("quota_classes", "class_name")


def downgrade() -> None:
    op.drop_table("quota_classes")
    op.drop_table("quotas")
