"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 11:32:18.801434
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
        "change_counter",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_counter")),
    )
    op.create_table(
        "consumer_types",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consumer_types")),
        sa.UniqueConstraint("name", name=op.f("uq_consumer_types_name")),
    )
    op.create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_placement_aggregates")),
        sa.UniqueConstraint("uuid", name=op.f("uq_placement_aggregates_uuid")),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "external_id",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("external_id", name=op.f("uq_projects_external_id")),
    )
    op.create_table(
        "provider_changes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_provider_changes")),
    )
    with op.batch_alter_table("provider_changes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_provider_changes_seq"), ["seq"], unique=False)

    op.create_table(
        "resource_classes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_classes")),
        sa.UniqueConstraint("name", name=op.f("uq_resource_classes_name")),
    )
    op.create_table(
        "resource_providers",
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
            sa.String(length=200).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=200), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("generation", sa.Integer(), server_default="0", nullable=False),
        sa.Column("root_provider_id", sa.Integer(), nullable=True),
        sa.Column("parent_provider_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["parent_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_resource_providers_parent_provider_id_resource_providers"),
        ),
        sa.ForeignKeyConstraint(
            ["root_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_resource_providers_root_provider_id_resource_providers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_providers")),
        sa.UniqueConstraint("name", name=op.f("uq_resource_providers_name")),
        sa.UniqueConstraint("uuid", name=op.f("uq_resource_providers_uuid")),
    )
    with op.batch_alter_table("resource_providers", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_resource_providers_parent_provider_id"),
            ["parent_provider_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_resource_providers_root_provider_id"), ["root_provider_id"], unique=False
        )

    op.create_table(
        "traits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "name",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_traits")),
        sa.UniqueConstraint("name", name=op.f("uq_traits_name")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "external_id",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("external_id", name=op.f("uq_users_external_id")),
    )
    op.create_table(
        "consumers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), server_default="0", nullable=False),
        sa.Column("consumer_type_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["consumer_type_id"],
            ["consumer_types.id"],
            name=op.f("fk_consumers_consumer_type_id_consumer_types"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_consumers_project_id_projects")
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_consumers_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consumers")),
        sa.UniqueConstraint("uuid", name=op.f("uq_consumers_uuid")),
    )
    with op.batch_alter_table("consumers", schema=None) as batch_op:
        batch_op.create_index(
            "ix_consumers_project_id_user_id", ["project_id", "user_id"], unique=False
        )

    op.create_table(
        "inventories",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("resource_class_id", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("reserved", sa.Integer(), nullable=False),
        sa.Column("min_unit", sa.Integer(), nullable=False),
        sa.Column("max_unit", sa.Integer(), nullable=False),
        sa.Column("step_size", sa.Integer(), nullable=False),
        sa.Column("allocation_ratio", sa.Double(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["resource_class_id"],
            ["resource_classes.id"],
            name=op.f("fk_inventories_resource_class_id_resource_classes"),
        ),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_inventories_resource_provider_id_resource_providers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inventories")),
        sa.UniqueConstraint(
            "resource_provider_id",
            "resource_class_id",
            name=op.f("uq_inventories_resource_provider_id_resource_class_id"),
        ),
    )
    with op.batch_alter_table("inventories", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inventories_resource_class_id", ["resource_class_id"], unique=False
        )

    op.create_table(
        "resource_provider_aggregates",
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("aggregate_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["aggregate_id"],
            ["placement_aggregates.id"],
            name=op.f("fk_resource_provider_aggregates_aggregate_id_placement_aggregates"),
        ),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_resource_provider_aggregates_resource_provider_id_resource_providers"),
        ),
        sa.PrimaryKeyConstraint(
            "resource_provider_id", "aggregate_id", name=op.f("pk_resource_provider_aggregates")
        ),
    )
    with op.batch_alter_table("resource_provider_aggregates", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_resource_provider_aggregates_aggregate_id"),
            ["aggregate_id"],
            unique=False,
        )

    op.create_table(
        "resource_provider_traits",
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("trait_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_resource_provider_traits_resource_provider_id_resource_providers"),
        ),
        sa.ForeignKeyConstraint(
            ["trait_id"], ["traits.id"], name=op.f("fk_resource_provider_traits_trait_id_traits")
        ),
        sa.PrimaryKeyConstraint(
            "resource_provider_id", "trait_id", name=op.f("pk_resource_provider_traits")
        ),
    )
    with op.batch_alter_table("resource_provider_traits", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_resource_provider_traits_trait_id"), ["trait_id"], unique=False
        )

    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("consumer_id", sa.Integer(), nullable=False),
        sa.Column("resource_class_id", sa.Integer(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["consumer_id"], ["consumers.id"], name=op.f("fk_allocations_consumer_id_consumers")
        ),
        sa.ForeignKeyConstraint(
            ["resource_class_id"],
            ["resource_classes.id"],
            name=op.f("fk_allocations_resource_class_id_resource_classes"),
        ),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name=op.f("fk_allocations_resource_provider_id_resource_providers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_allocations")),
    )
    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.create_index("ix_allocations_consumer_id", ["consumer_id"], unique=False)
        batch_op.create_index(
            "ix_allocations_resource_provider_class_used",
            ["resource_provider_id", "resource_class_id", "used"],
            unique=False,
        )


def downgrade() -> None:

    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.drop_index("ix_allocations_resource_provider_class_used")
        batch_op.drop_index("ix_allocations_consumer_id")

    op.drop_table("allocations")
    with op.batch_alter_table("resource_provider_traits", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_resource_provider_traits_trait_id"))

    op.drop_table("resource_provider_traits")
    with op.batch_alter_table("resource_provider_aggregates", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_resource_provider_aggregates_aggregate_id"))

    op.drop_table("resource_provider_aggregates")
    with op.batch_alter_table("inventories", schema=None) as batch_op:
        batch_op.drop_index("ix_inventories_resource_class_id")

    op.drop_table("inventories")
    with op.batch_alter_table("consumers", schema=None) as batch_op:
        batch_op.drop_index("ix_consumers_project_id_user_id")

    op.drop_table("consumers")
    op.drop_table("users")
    op.drop_table("traits")
    with op.batch_alter_table("resource_providers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_resource_providers_root_provider_id"))
        batch_op.drop_index(batch_op.f("ix_resource_providers_parent_provider_id"))

    op.drop_table("resource_providers")
    op.drop_table("resource_classes")
    with op.batch_alter_table("provider_changes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_provider_changes_seq"))

    op.drop_table("provider_changes")
    op.drop_table("projects")
    op.drop_table("placement_aggregates")
    op.drop_table("consumer_types")
    op.drop_table("change_counter")
