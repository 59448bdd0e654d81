"""project_user_quotas: a user's own quota limits within a project (Nova's per-user
quotas, ``/os-quota-sets/{project}?user_id=``).

Revision ID: compute_interop_0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "compute_interop_0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "project_user_quotas",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("user_id", _name(255), nullable=False),
        sa.Column("resource", _name(255), nullable=False),
        sa.Column("hard_limit", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_project_user_quotas")),
        sa.UniqueConstraint("project_id", "user_id", "resource",
                            name=op.f("uq_project_user_quotas_project_id_user_id_resource")),
    )


def downgrade() -> None:
    op.drop_table("project_user_quotas")
