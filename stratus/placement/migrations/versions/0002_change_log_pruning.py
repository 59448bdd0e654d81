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


# store.common.KEEP_CHANGES when this migration was written (a migration keeps its own).
KEEP = 100_000


def upgrade() -> None:
    with op.batch_alter_table("change_counter", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pruned_through", sa.BigInteger(), nullable=False,
                                      server_default="0"))
    # Prune the log kept so far here, once, rather than in the first write after the
    # upgrade, which would delete it all while holding the counter every writer needs.
    op.execute(f"DELETE FROM provider_changes WHERE seq <= "
               f"(SELECT value FROM change_counter WHERE id = 1) - {KEEP}")
    op.execute(f"UPDATE change_counter SET pruned_through = "
               f"CASE WHEN value > {KEEP} THEN value - {KEEP} ELSE 0 END WHERE id = 1")


def downgrade() -> None:
    with op.batch_alter_table("change_counter", schema=None) as batch_op:
        batch_op.drop_column("pruned_through")
