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

members = sa.Table(
    "image_members", metadata,
    sa.Column("image_id", columns.name(36), sa.ForeignKey("images.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("member_id", columns.name(255), primary_key=True, index=True),
    sa.Column("status", columns.name(20), nullable=False),
    *columns.timestamps(),
)

# Data staged for an interoperable import (PUT /v2/images/{id}/stage), measured as it
# arrived; the file is <store_dir>/staging/<image id>.
staged = sa.Table(
    "image_staged", metadata,
    sa.Column("image_id", columns.name(36), sa.ForeignKey("images.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("checksum", columns.name(32), nullable=False),
    sa.Column("os_hash_value", columns.name(128), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

# Glance's tasks: what an import did (GET /v2/images/{id}/tasks, /v2/tasks).
tasks = sa.Table(
    "image_tasks", metadata,
    sa.Column("id", columns.name(36), primary_key=True),
    sa.Column("type", columns.name(30), nullable=False),
    sa.Column("status", columns.name(30), nullable=False),
    sa.Column("owner", columns.name(255), nullable=True, index=True),
    sa.Column("image_id", columns.name(36), nullable=True, index=True),
    sa.Column("request_id", columns.name(64), nullable=True),
    sa.Column("user_id", columns.name(64), nullable=True),
    sa.Column("input", sa.Text, nullable=False),
    sa.Column("result", sa.Text, nullable=True),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=True),
    *columns.timestamps(),
)

# ---- metadata definitions (metadefs) ------------------------------------------------------

metadef_namespaces = sa.Table(
    "metadef_namespaces", metadata,
    sa.Column("id", columns.name(36), primary_key=True),
    sa.Column("namespace", columns.name(80), nullable=False, unique=True),
    sa.Column("display_name", columns.name(80), nullable=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("visibility", columns.name(32), nullable=False),
    sa.Column("protected", sa.Boolean, nullable=False),
    sa.Column("owner", columns.name(255), nullable=True),
    *columns.timestamps(),
)

metadef_resource_types = sa.Table(
    "metadef_resource_types", metadata,
    sa.Column("name", columns.name(80), primary_key=True),
    sa.Column("protected", sa.Boolean, nullable=False),
    *columns.timestamps(),
)


def _in_namespace(table: str, *cols: sa.Column) -> sa.Table:
    """A table of things named within a namespace, gone with it."""
    return sa.Table(
        table, metadata,
        sa.Column("namespace_id", columns.name(36),
                  sa.ForeignKey("metadef_namespaces.id", ondelete="CASCADE"),
                  primary_key=True),
        *cols, *columns.timestamps())


metadef_associations = _in_namespace(
    "metadef_associations",
    sa.Column("resource_type", columns.name(80),
              sa.ForeignKey("metadef_resource_types.name", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("prefix", columns.name(80), nullable=True),
    sa.Column("properties_target", columns.name(80), nullable=True))

metadef_properties = _in_namespace(
    "metadef_properties",
    sa.Column("name", columns.name(80), primary_key=True),
    sa.Column("definition", sa.Text, nullable=False))   # JSON: title, type, enum, ...

metadef_objects = _in_namespace(
    "metadef_objects",
    sa.Column("name", columns.name(80), primary_key=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("required", sa.Text, nullable=True),       # JSON list
    sa.Column("properties", sa.Text, nullable=True))     # JSON: name -> definition

metadef_tags = _in_namespace(
    "metadef_tags",
    sa.Column("name", columns.name(255), primary_key=True))
