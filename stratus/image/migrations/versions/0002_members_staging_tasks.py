"""image members, staged imports, tasks

Revision ID: 0002
Revises: 0001

Sharing images with other projects (members and their status), data staged for an
interoperable import (glance-direct), and the tasks imports leave behind.
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
    op.create_table(
        "image_members",
        sa.Column("image_id", _name(36), nullable=False),
        sa.Column("member_id", _name(255), nullable=False),
        sa.Column("status", _name(20), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["image_id"], ["images.id"], ondelete="CASCADE",
                                name=op.f("fk_image_members_image_id_images")),
        sa.PrimaryKeyConstraint("image_id", "member_id", name=op.f("pk_image_members")),
    )
    op.create_index(op.f("ix_image_members_member_id"), "image_members", ["member_id"])
    op.create_table(
        "image_staged",
        sa.Column("image_id", _name(36), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("checksum", _name(32), nullable=False),
        sa.Column("os_hash_value", _name(128), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["image_id"], ["images.id"], ondelete="CASCADE",
                                name=op.f("fk_image_staged_image_id_images")),
        sa.PrimaryKeyConstraint("image_id", name=op.f("pk_image_staged")),
    )
    op.create_table(
        "image_tasks",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("type", _name(30), nullable=False),
        sa.Column("status", _name(30), nullable=False),
        sa.Column("owner", _name(255), nullable=True),
        sa.Column("image_id", _name(36), nullable=True),
        sa.Column("request_id", _name(64), nullable=True),
        sa.Column("user_id", _name(64), nullable=True),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_image_tasks")),
    )
    op.create_index(op.f("ix_image_tasks_owner"), "image_tasks", ["owner"])
    op.create_index(op.f("ix_image_tasks_image_id"), "image_tasks", ["image_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_image_tasks_image_id"), table_name="image_tasks")
    op.drop_index(op.f("ix_image_tasks_owner"), table_name="image_tasks")
    op.drop_table("image_tasks")
    op.drop_table("image_staged")
    op.drop_index(op.f("ix_image_members_member_id"), table_name="image_members")
    op.drop_table("image_members")
