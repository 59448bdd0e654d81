"""instances: indexes for GET /servers (a name lookup, the default order for everyone
and for a project, changes-since).

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f("ix_instances_name"), "instances", ["name"])
    op.create_index(op.f("ix_instances_created_at_uuid"), "instances", ["created_at", "uuid"])
    op.create_index(op.f("ix_instances_updated_at"), "instances", ["updated_at"])
    op.create_index(op.f("ix_instances_project_id_created_at_uuid"), "instances",
                    ["project_id", "created_at", "uuid"])


def downgrade() -> None:
    op.drop_index(op.f("ix_instances_project_id_created_at_uuid"), table_name="instances")
    op.drop_index(op.f("ix_instances_updated_at"), table_name="instances")
    op.drop_index(op.f("ix_instances_created_at_uuid"), table_name="instances")
    op.drop_index(op.f("ix_instances_name"), table_name="instances")
