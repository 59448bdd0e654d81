"""build_requests: an index on the name, for GET /servers?name= while a large boot waits.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f("ix_build_requests_name"), "build_requests", ["name"])


def downgrade() -> None:
    op.drop_index(op.f("ix_build_requests_name"), table_name="build_requests")
