"""initial api schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 11:39:31.897110
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "aggregates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_aggregates")),
        sa.UniqueConstraint("name", name=op.f("uq_aggregates_name")),
        sa.UniqueConstraint("uuid", name=op.f("uq_aggregates_uuid")),
    )
    op.create_table(
        "cell_mappings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column("transport_url", sa.Text(), nullable=False),
        sa.Column("database_connection", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cell_mappings")),
        sa.UniqueConstraint("uuid", name=op.f("uq_cell_mappings_uuid")),
    )
    op.create_table(
        "flavors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "flavorid",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("vcpus", sa.Integer(), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("root_gb", sa.Integer(), nullable=False),
        sa.Column("ephemeral_gb", sa.Integer(), server_default="0", nullable=False),
        sa.Column("swap", sa.Integer(), server_default="0", nullable=False),
        sa.Column("is_public", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flavors")),
        sa.UniqueConstraint("flavorid", name=op.f("uq_flavors_flavorid")),
        sa.UniqueConstraint("name", name=op.f("uq_flavors_name")),
    )
    op.create_table(
        "request_specs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "instance_uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_request_specs")),
        sa.UniqueConstraint("instance_uuid", name=op.f("uq_request_specs_instance_uuid")),
    )
    op.create_table(
        "server_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "project_id",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "user_id",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("policy", sa.String(length=32), nullable=False),
        sa.Column("max_server_per_host", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_server_groups")),
        sa.UniqueConstraint("uuid", name=op.f("uq_server_groups_uuid")),
    )
    op.create_table(
        "aggregate_hosts",
        sa.Column("aggregate_id", sa.Integer(), nullable=False),
        sa.Column(
            "host",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["aggregate_id"],
            ["aggregates.id"],
            name=op.f("fk_aggregate_hosts_aggregate_id_aggregates"),
        ),
        sa.PrimaryKeyConstraint("aggregate_id", "host", name=op.f("pk_aggregate_hosts")),
    )
    op.create_table(
        "aggregate_metadata",
        sa.Column("aggregate_id", sa.Integer(), nullable=False),
        sa.Column(
            "key",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["aggregate_id"],
            ["aggregates.id"],
            name=op.f("fk_aggregate_metadata_aggregate_id_aggregates"),
        ),
        sa.PrimaryKeyConstraint("aggregate_id", "key", name=op.f("pk_aggregate_metadata")),
    )
    op.create_table(
        "flavor_extra_specs",
        sa.Column("flavor_id", sa.Integer(), nullable=False),
        sa.Column(
            "key",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["flavor_id"], ["flavors.id"], name=op.f("fk_flavor_extra_specs_flavor_id_flavors")
        ),
        sa.PrimaryKeyConstraint("flavor_id", "key", name=op.f("pk_flavor_extra_specs")),
    )
    op.create_table(
        "host_mappings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cell_id", sa.Integer(), nullable=False),
        sa.Column(
            "host",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cell_id"], ["cell_mappings.id"], name=op.f("fk_host_mappings_cell_id_cell_mappings")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_mappings")),
        sa.UniqueConstraint("host", name=op.f("uq_host_mappings_host")),
    )
    with op.batch_alter_table("host_mappings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_host_mappings_cell_id"), ["cell_id"], unique=False)

    op.create_table(
        "instance_mappings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "instance_uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("cell_id", sa.Integer(), nullable=True),
        sa.Column(
            "project_id",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "user_id",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column("queued_for_delete", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["cell_id"],
            ["cell_mappings.id"],
            name=op.f("fk_instance_mappings_cell_id_cell_mappings"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_mappings")),
        sa.UniqueConstraint("instance_uuid", name=op.f("uq_instance_mappings_instance_uuid")),
    )
    with op.batch_alter_table("instance_mappings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_instance_mappings_cell_id"), ["cell_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_instance_mappings_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "server_group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column(
            "instance_uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["server_groups.id"],
            name=op.f("fk_server_group_members_group_id_server_groups"),
        ),
        sa.PrimaryKeyConstraint("group_id", "instance_uuid", name=op.f("pk_server_group_members")),
    )


def downgrade() -> None:

    op.drop_table("server_group_members")
    with op.batch_alter_table("instance_mappings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instance_mappings_project_id"))
        batch_op.drop_index(batch_op.f("ix_instance_mappings_cell_id"))

    op.drop_table("instance_mappings")
    with op.batch_alter_table("host_mappings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_host_mappings_cell_id"))

    op.drop_table("host_mappings")
    op.drop_table("flavor_extra_specs")
    op.drop_table("aggregate_metadata")
    op.drop_table("aggregate_hosts")
    op.drop_table("server_groups")
    op.drop_table("request_specs")
    op.drop_table("flavors")
    op.drop_table("cell_mappings")
    op.drop_table("aggregates")
