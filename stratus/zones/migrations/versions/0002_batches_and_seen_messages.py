"""Boots grouped by the API request that asked (multi-creates, retried requests), and
the ids of accepted signed requests kept across restarts.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("batch", _name(64), nullable=True))
        batch.add_column(sa.Column("position", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.create_index(batch.f("ix_requests_batch"), ["batch"])
    op.create_table(
        "seen_messages",
        sa.Column("receiver", _name(255), nullable=False),
        sa.Column("msg_id", _name(64), nullable=False),
        sa.Column("sent_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("receiver", "msg_id", name=op.f("pk_seen_messages")),
    )
    op.create_index(op.f("ix_seen_messages_sent_at"), "seen_messages", ["sent_at"])


def downgrade() -> None:
    op.drop_table("seen_messages")
    with op.batch_alter_table("requests") as batch:
        batch.drop_index(batch.f("ix_requests_batch"))
        batch.drop_column("position")
        batch.drop_column("batch")
