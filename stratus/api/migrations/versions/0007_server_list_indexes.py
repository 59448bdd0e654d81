"""build_requests: indexes for GET /servers while a large boot waits (the name, the
default order).

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f("ix_build_requests_name"), "build_requests", ["name"])
    op.create_index(op.f("ix_build_requests_created_at_instance_uuid"), "build_requests",
                    ["created_at", "instance_uuid"])


def downgrade() -> None:
    op.drop_index(op.f("ix_build_requests_created_at_instance_uuid"),
                  table_name="build_requests")
    op.drop_index(op.f("ix_build_requests_name"), table_name="build_requests")
