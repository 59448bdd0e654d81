"""build_requests.instance: what a boot asked for beyond the name (JSON), shown while no
cell holds the server.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("build_requests") as batch:
        batch.add_column(sa.Column("instance", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("build_requests") as batch:
        batch.drop_column("instance")
