"""build_requests.instance: what a boot asked for beyond the name (JSON), shown while no
cell holds the server.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("build_requests") as batch:
        batch.add_column(sa.Column("instance", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("build_requests") as batch:
        batch.drop_column("instance")
