"""flavor_projects: the projects that may use a private flavor (os-flavor-access);
flavors.rxtx_factor (shown by the compute API until 2.102).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("flavors") as batch:
        batch.add_column(sa.Column("rxtx_factor", sa.Float(), nullable=False,
                                   server_default="1.0"))
    op.create_table(
        "flavor_projects",
        sa.Column("flavor_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.String(255).with_variant(
            mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"),
            nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["flavor_id"], ["flavors.id"],
                                name=op.f("fk_flavor_projects_flavor_id_flavors")),
        sa.PrimaryKeyConstraint("flavor_id", "project_id", name=op.f("pk_flavor_projects")),
    )


def downgrade() -> None:
    op.drop_table("flavor_projects")
    with op.batch_alter_table("flavors") as batch:
        batch.drop_column("rxtx_factor")
