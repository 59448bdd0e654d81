"""A zone manager's local store: children, requests, server locations.

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


def _stamps() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True)]


def upgrade() -> None:
    op.create_table(
        "children",
        sa.Column("name", _name(255), nullable=False),
        sa.Column("capabilities", sa.Text(), nullable=True),
        sa.Column("received_at", sa.Float(), nullable=True),
        *_stamps(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_children")),
    )
    op.create_table(
        "requests",
        sa.Column("uuid", _name(36), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("plan", sa.Text(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cancelled", sa.Boolean(), nullable=False, server_default=sa.false()),
        *_stamps(),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_requests")),
    )
    op.create_table(
        "server_locations",
        sa.Column("server_uuid", _name(36), nullable=False),
        sa.Column("route", _name(255), nullable=False),
        sa.Column("host", _name(255), nullable=False),
        sa.Column("project_id", _name(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("server_uuid", name=op.f("pk_server_locations")),
    )
    op.create_index(op.f("ix_server_locations_route"), "server_locations", ["route"])
    op.create_index(op.f("ix_server_locations_project_id"), "server_locations",
                    ["project_id"])


def downgrade() -> None:
    op.drop_table("server_locations")
    op.drop_table("requests")
    op.drop_table("children")
