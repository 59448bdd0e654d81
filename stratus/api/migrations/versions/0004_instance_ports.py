"""instance_ports: which ports a server has, and whether each is the user's.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def upgrade() -> None:
    op.create_table(
        "instance_ports",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("instance_uuid", _name(36), nullable=False),
        sa.Column("port_id", _name(36), nullable=False),
        sa.Column("preserve_on_delete", sa.Boolean(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_ports")),
        sa.UniqueConstraint("port_id", name=op.f("uq_instance_ports_port_id")),
    )
    op.create_index(op.f("ix_instance_ports_instance_uuid"), "instance_ports",
                    ["instance_uuid"])


def downgrade() -> None:
    op.drop_index(op.f("ix_instance_ports_instance_uuid"), table_name="instance_ports")
    op.drop_table("instance_ports")
