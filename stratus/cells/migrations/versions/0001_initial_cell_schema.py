"""initial cell schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 11:39:31.959792
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
        "instances",
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
        sa.Column(
            "host",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column(
            "node",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column(
            "availability_zone",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column("flavor", sa.Text(), nullable=False),
        sa.Column("vm_state", sa.String(length=32), nullable=False),
        sa.Column("task_state", sa.String(length=64), nullable=True),
        sa.Column("power_state", sa.Integer(), server_default="0", nullable=False),
        sa.Column("fault", sa.Text(), nullable=True),
        sa.Column("launched_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instances")),
        sa.UniqueConstraint("uuid", name=op.f("uq_instances_uuid")),
    )
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_instances_host"), ["host"], unique=False)
        batch_op.create_index(batch_op.f("ix_instances_project_id"), ["project_id"], unique=False)

    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "instance_uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("migration_type", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column(
            "source_compute",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column(
            "dest_compute",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column(
            "source_node",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column(
            "dest_node",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column("old_flavor", sa.Text(), nullable=True),
        sa.Column("new_flavor", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_migrations")),
        sa.UniqueConstraint("uuid", name=op.f("uq_migrations_uuid")),
    )
    with op.batch_alter_table("migrations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_migrations_instance_uuid"), ["instance_uuid"], unique=False
        )

    op.create_table(
        "services",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "host",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "binary",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "topic",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=True,
        ),
        sa.Column("report_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("disabled_reason", sa.String(length=255), nullable=True),
        sa.Column("forced_down", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("last_seen_up", sa.DateTime(), nullable=True),
        sa.Column("version", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_services")),
        sa.UniqueConstraint("host", "binary", name=op.f("uq_services_host_binary")),
        sa.UniqueConstraint("uuid", name=op.f("uq_services_uuid")),
    )
    op.create_table(
        "compute_nodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "uuid",
            sa.String(length=36).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=36), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("service_id", sa.Integer(), nullable=True),
        sa.Column(
            "host",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column(
            "hypervisor_hostname",
            sa.String(length=255).with_variant(
                mysql.VARCHAR(charset="utf8mb4", collation="utf8mb4_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("hypervisor_type", sa.String(length=64), nullable=False),
        sa.Column("vcpus", sa.Integer(), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("local_gb", sa.Integer(), nullable=False),
        sa.Column("vcpus_used", sa.Integer(), server_default="0", nullable=False),
        sa.Column("memory_mb_used", sa.Integer(), server_default="0", nullable=False),
        sa.Column("local_gb_used", sa.Integer(), server_default="0", nullable=False),
        sa.Column("running_vms", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["service_id"], ["services.id"], name=op.f("fk_compute_nodes_service_id_services")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compute_nodes")),
        sa.UniqueConstraint(
            "hypervisor_hostname", name=op.f("uq_compute_nodes_hypervisor_hostname")
        ),
        sa.UniqueConstraint("uuid", name=op.f("uq_compute_nodes_uuid")),
    )
    with op.batch_alter_table("compute_nodes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_compute_nodes_host"), ["host"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("compute_nodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_compute_nodes_host"))

    op.drop_table("compute_nodes")
    op.drop_table("services")
    with op.batch_alter_table("migrations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_migrations_instance_uuid"))

    op.drop_table("migrations")
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instances_project_id"))
        batch_op.drop_index(batch_op.f("ix_instances_host"))

    op.drop_table("instances")
