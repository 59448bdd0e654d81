"""key_pairs: users' public keys for servers (os-keypairs).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "key_pairs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        sa.Column("user_id", _name(255), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("type", sa.String(10), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_key_pairs")),
        sa.UniqueConstraint("user_id", "name", name=op.f("uq_key_pairs_user_id_name")),
    )


def downgrade() -> None:
    op.drop_table("key_pairs")
