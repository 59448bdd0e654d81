"""policies: Keystone's /v3/policies blobs

Revision ID: network_interop_0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "network_interop_0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "policies",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("type", _name(255), nullable=False),
        sa.Column("blob", sa.Text(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policies")),
    )


def downgrade() -> None:
    op.drop_table("policies")
