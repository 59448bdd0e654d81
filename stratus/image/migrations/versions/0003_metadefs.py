"""metadata definitions (metadefs)

Revision ID: 0003
Revises: 0002

Glance's metadefs catalog: namespaces, the resource types they apply to, and their
property, object and tag definitions. The standard resource types are seeded here.
"""

import datetime as dt

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The resource types Glance's own catalog associates namespaces with.
RESOURCE_TYPES = ("OS::Glance::Image", "OS::Cinder::Volume", "OS::Nova::Flavor",
                  "OS::Nova::Aggregate", "OS::Nova::Server", "OS::Trove::Instance",
                  "OS::Glance::Metadef")


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def _stamps() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True)]


def _in_namespace(table: str, key: sa.Column, *cols: sa.Column,
                  extra: tuple[sa.Constraint, ...] = ()) -> None:
    op.create_table(
        table,
        sa.Column("namespace_id", _name(36), nullable=False), key, *cols, *_stamps(),
        sa.ForeignKeyConstraint(["namespace_id"], ["metadef_namespaces.id"],
                                ondelete="CASCADE",
                                name=op.f(f"fk_{table}_namespace_id_metadef_namespaces")),
        *extra,
        sa.PrimaryKeyConstraint("namespace_id", key.name, name=op.f(f"pk_{table}")),
    )


def upgrade() -> None:
    op.create_table(
        "metadef_namespaces",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("namespace", _name(80), nullable=False),
        sa.Column("display_name", _name(80), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("visibility", _name(32), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("owner", _name(255), nullable=True),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metadef_namespaces")),
        sa.UniqueConstraint("namespace", name=op.f("uq_metadef_namespaces_namespace")),
    )
    types = op.create_table(
        "metadef_resource_types",
        sa.Column("name", _name(80), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_metadef_resource_types")),
    )
    _in_namespace(
        "metadef_associations", sa.Column("resource_type", _name(80), nullable=False),
        sa.Column("prefix", _name(80), nullable=True),
        sa.Column("properties_target", _name(80), nullable=True),
        extra=(sa.ForeignKeyConstraint(
            ["resource_type"], ["metadef_resource_types.name"], ondelete="CASCADE",
            name=op.f("fk_metadef_associations_resource_type_metadef_resource_types")),))
    _in_namespace("metadef_properties", sa.Column("name", _name(80), nullable=False),
                  sa.Column("definition", sa.Text(), nullable=False))
    _in_namespace("metadef_objects", sa.Column("name", _name(80), nullable=False),
                  sa.Column("description", sa.Text(), nullable=True),
                  sa.Column("required", sa.Text(), nullable=True),
                  sa.Column("properties", sa.Text(), nullable=True))
    _in_namespace("metadef_tags", sa.Column("name", _name(255), nullable=False))
    now = dt.datetime(2026, 1, 1)
    op.bulk_insert(types, [{"name": name, "protected": True, "created_at": now}
                           for name in RESOURCE_TYPES])


def downgrade() -> None:
    for table in ("metadef_tags", "metadef_objects", "metadef_properties",
                  "metadef_associations", "metadef_resource_types", "metadef_namespaces"):
        op.drop_table(table)
