"""The image database: images, image_properties, image_tags.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "images",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("name", _name(255), nullable=True),
        sa.Column("status", _name(30), nullable=False),
        sa.Column("visibility", _name(20), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("os_hidden", sa.Boolean(), nullable=False),
        sa.Column("disk_format", _name(20), nullable=True),
        sa.Column("container_format", _name(20), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("checksum", _name(32), nullable=True),
        sa.Column("os_hash_algo", _name(64), nullable=True),
        sa.Column("os_hash_value", _name(128), nullable=True),
        sa.Column("min_disk", sa.Integer(), nullable=False),
        sa.Column("min_ram", sa.Integer(), nullable=False),
        sa.Column("owner", _name(255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_images")),
    )
    op.create_index(op.f("ix_images_name"), "images", ["name"])
    op.create_index(op.f("ix_images_owner"), "images", ["owner"])
    op.create_table(
        "image_properties",
        sa.Column("image_id", _name(36), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["image_id"], ["images.id"], ondelete="CASCADE",
                                name=op.f("fk_image_properties_image_id_images")),
        sa.PrimaryKeyConstraint("image_id", "name", name=op.f("pk_image_properties")),
    )
    op.create_table(
        "image_tags",
        sa.Column("image_id", _name(36), nullable=False),
        sa.Column("tag", _name(255), nullable=False),
        sa.ForeignKeyConstraint(["image_id"], ["images.id"], ondelete="CASCADE",
                                name=op.f("fk_image_tags_image_id_images")),
        sa.PrimaryKeyConstraint("image_id", "tag", name=op.f("pk_image_tags")),
    )


def downgrade() -> None:
    op.drop_table("image_tags")
    op.drop_table("image_properties")
    op.drop_index(op.f("ix_images_owner"), table_name="images")
    op.drop_index(op.f("ix_images_name"), table_name="images")
    op.drop_table("images")
