"""Metering labels and their rules.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "metering_labels",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("name", _name(255), nullable=False, server_default=""),
        sa.Column("description", _name(255), nullable=False, server_default=""),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metering_labels")),
    )
    op.create_index(op.f("ix_metering_labels_project_id"), "metering_labels", ["project_id"])
    op.create_table(
        "metering_label_rules",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("metering_label_id", _name(36), nullable=False),
        sa.Column("direction", _name(16), nullable=False),
        sa.Column("excluded", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("remote_ip_prefix", _name(64), nullable=True),
        sa.Column("source_ip_prefix", _name(64), nullable=True),
        sa.Column("destination_ip_prefix", _name(64), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["metering_label_id"], ["metering_labels.id"], ondelete="CASCADE",
            name=op.f("fk_metering_label_rules_metering_label_id_metering_labels")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metering_label_rules")),
    )
    op.create_index(op.f("ix_metering_label_rules_metering_label_id"),
                    "metering_label_rules", ["metering_label_id"])


def downgrade() -> None:
    op.drop_table("metering_label_rules")
    op.drop_table("metering_labels")
