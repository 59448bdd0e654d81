"""request_specs.vcpus and .memory_mb: the spec's flavor's vCPUs and RAM beside its JSON,
so a quota check counts a project's cores and RAM with one SQL sum (as Nova sums its
instances' columns) rather than by parsing every request spec of the project.

Revision ID: bootcpu_0012
Revises: compute_interop_0011
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "bootcpu_0012"
down_revision = "compute_interop_0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_specs") as batch:
        batch.add_column(sa.Column("vcpus", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("memory_mb", sa.Integer(), nullable=True))
    specs = sa.table("request_specs", sa.column("id", sa.Integer), sa.column("spec", sa.Text),
                     sa.column("vcpus", sa.Integer), sa.column("memory_mb", sa.Integer))
    conn = op.get_bind()
    rows = conn.execute(sa.select(specs.c.id, specs.c.spec)).all()
    for row in rows:
        try:
            flavor = json.loads(row.spec).get("flavor") or {}
        except (TypeError, ValueError, AttributeError):
            continue
        conn.execute(sa.update(specs).where(specs.c.id == row.id).values(
            vcpus=int(flavor.get("vcpus") or 0), memory_mb=int(flavor.get("memory_mb") or 0)))


def downgrade() -> None:
    with op.batch_alter_table("request_specs") as batch:
        batch.drop_column("memory_mb")
        batch.drop_column("vcpus")
