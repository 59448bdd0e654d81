"""instance actions and their events

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26 05:20:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.types.TypeEngine:
    return sa.String(length=length).with_variant(
        mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=length), "mysql")


def upgrade() -> None:
    op.create_table(
        "instance_actions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=255), nullable=False),
        sa.Column("instance_uuid", _name(36), nullable=False),
        sa.Column("request_id", _name(255), nullable=False),
        sa.Column("user_id", _name(255), nullable=True),
        sa.Column("project_id", _name(255), nullable=True),
        sa.Column("start_time", sa.DateTime(), nullable=False),
        sa.Column("finish_time", sa.DateTime(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_actions")),
    )
    with op.batch_alter_table("instance_actions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_instance_actions_instance_uuid"),
                              ["instance_uuid"], unique=False)
        batch_op.create_index("ix_instance_actions_instance_uuid_request_id",
                              ["instance_uuid", "request_id"], unique=False)
    op.create_table(
        "instance_actions_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("action_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(length=255), nullable=False),
        sa.Column("start_time", sa.DateTime(), nullable=False),
        sa.Column("finish_time", sa.DateTime(), nullable=True),
        sa.Column("result", sa.String(length=32), nullable=True),
        sa.Column("host", _name(255), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["action_id"], ["instance_actions.id"],
            name=op.f("fk_instance_actions_events_action_id_instance_actions"),
            ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_actions_events")),
    )
    with op.batch_alter_table("instance_actions_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_instance_actions_events_action_id"),
                              ["action_id"], unique=False)


def downgrade() -> None:
    op.drop_table("instance_actions_events")
    op.drop_table("instance_actions")
