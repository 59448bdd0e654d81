"""running usage totals: inventories.used

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 17:40:00

Every allocation write now moves ``inventories.used`` in its own transaction;
the upgrade fills it with the sum of the allocations already there.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inventories", schema=None) as batch_op:
        batch_op.add_column(sa.Column("used", sa.BigInteger(), nullable=False,
                                      server_default="0"))
    op.execute(
        "UPDATE inventories SET used = COALESCE((SELECT SUM(a.used) FROM allocations a "
        "WHERE a.resource_provider_id = inventories.resource_provider_id "
        "AND a.resource_class_id = inventories.resource_class_id), 0)"
    )


def downgrade() -> None:
    with op.batch_alter_table("inventories", schema=None) as batch_op:
        batch_op.drop_column("used")
