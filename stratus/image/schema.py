"""The image database: images, their extra properties (``os_type``, ``hw_*``, ...) and
tags. The data itself is a file per image beside the database (``[image] store_dir``)."""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()

images = sa.Table(
    "images", metadata,
    sa.Column("id", columns.name(36), primary_key=True),
    sa.Column("name", columns.name(255), nullable=True, index=True),
    sa.Column("status", columns.name(30), nullable=False),
    sa.Column("visibility", columns.name(20), nullable=False),
    sa.Column("protected", sa.Boolean, nullable=False, default=False),
    sa.Column("os_hidden", sa.Boolean, nullable=False, default=False),
    sa.Column("disk_format", columns.name(20), nullable=True),
    sa.Column("container_format", columns.name(20), nullable=True),
    sa.Column("size", sa.BigInteger, nullable=True),
    sa.Column("checksum", columns.name(32), nullable=True),
    sa.Column("os_hash_algo", columns.name(64), nullable=True),
    sa.Column("os_hash_value", columns.name(128), nullable=True),
    sa.Column("min_disk", sa.Integer, nullable=False, default=0),
    sa.Column("min_ram", sa.Integer, nullable=False, default=0),
    sa.Column("owner", columns.name(255), nullable=True, index=True),
    *columns.timestamps(),
)

properties = sa.Table(
    "image_properties", metadata,
    sa.Column("image_id", columns.name(36), sa.ForeignKey("images.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("name", columns.name(255), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

tags = sa.Table(
    "image_tags", metadata,
    sa.Column("image_id", columns.name(36), sa.ForeignKey("images.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("tag", columns.name(255), primary_key=True),
)
