"""The server lifecycle: what users set on a server (description, access addresses,
metadata, tags), its lock, its multi-create reservation, what it booted with, soft
deletion, and Nova's system metadata.

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


_COLUMNS: list[tuple[str, sa.types.TypeEngine]] = [
    ("description", sa.Text()), ("access_ip_v4", sa.String(39)),
    ("access_ip_v6", sa.String(39)), ("locked_by", sa.String(16)),
    ("locked_reason", sa.Text()), ("reservation_id", _name(36)),
    ("launch_index", sa.Integer()), ("hostname", _name(255)), ("user_data", sa.Text()),
    ("config_drive", sa.String(255)), ("soft_deleted_at", sa.DateTime()),
    ("terminated_at", sa.DateTime()), ("system_metadata", sa.Text()),
]


def upgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        for name, kind in _COLUMNS:
            batch.add_column(sa.Column(name, kind, nullable=True))
    op.create_table(
        "instance_metadata",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance_uuid", _name(36), nullable=False),
        sa.Column("key", _name(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_metadata")),
        sa.UniqueConstraint("instance_uuid", "key",
                            name=op.f("uq_instance_metadata_instance_uuid_key")),
    )
    op.create_table(
        "instance_tags",
        sa.Column("instance_uuid", _name(36), nullable=False),
        sa.Column("tag", _name(60), nullable=False),
        sa.PrimaryKeyConstraint("instance_uuid", "tag", name=op.f("pk_instance_tags")),
    )
    op.create_index(op.f("ix_instance_tags_tag"), "instance_tags", ["tag"])


def downgrade() -> None:
    op.drop_index(op.f("ix_instance_tags_tag"), table_name="instance_tags")
    op.drop_table("instance_tags")
    op.drop_table("instance_metadata")
    with op.batch_alter_table("instances") as batch:
        for name, _ in reversed(_COLUMNS):
            batch.drop_column(name)
