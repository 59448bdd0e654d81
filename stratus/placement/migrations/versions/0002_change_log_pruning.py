"""change log pruning: change_counter.pruned_through

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 17:30:00

provider_changes grew by a row per provider per write, for ever. Writers now
prune it behind them; ``pruned_through`` tells a reader whose index is older
than the pruned part to reload instead of trusting the log.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("change_counter", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pruned_through", sa.BigInteger(), nullable=False,
                                      server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("change_counter", schema=None) as batch_op:
        batch_op.drop_column("pruned_through")
