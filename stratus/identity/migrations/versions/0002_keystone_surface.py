"""domains, groups, role assignments on any target, the catalog, application credentials,
credentials, project tags and parents, implied roles, revocation by user

Revision ID: 0002
Revises: 0001

The one-domain, project-only identity database grows Keystone's everyday surface. The
project role assignments move into ``role_assignments`` (actor user, target project);
the default domain becomes a row.
"""

import datetime as dt

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def _fk(table: str, column: str, target: str, ondelete: str | None = "CASCADE"
        ) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"], ondelete=ondelete,
                                   name=op.f(f"fk_{table}_{column}_{target}"))


def upgrade() -> None:
    domains = op.create_table(
        "domains",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("name", _name(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domains")),
        sa.UniqueConstraint("name", name=op.f("uq_domains_name")),
    )
    op.bulk_insert(domains, [{"id": "default", "name": "Default",
                              "description": "The default domain", "enabled": True,
                              "created_at": dt.datetime(2026, 1, 1)}])
    with op.batch_alter_table("projects") as batch:
        batch.add_column(sa.Column("parent_id", _name(64), nullable=True))
        batch.add_column(sa.Column("extra", sa.Text(), nullable=True))
        batch.create_index(op.f("ix_projects_parent_id"), ["parent_id"])
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("extra", sa.Text(), nullable=True))
    op.create_table(
        "project_tags",
        sa.Column("project_id", _name(64), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        _fk("project_tags", "project_id", "projects"),
        sa.PrimaryKeyConstraint("project_id", "name", name=op.f("pk_project_tags")),
    )
    op.create_table(
        "groups",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("name", _name(64), nullable=False),
        sa.Column("domain_id", _name(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_groups")),
        sa.UniqueConstraint("domain_id", "name", name=op.f("uq_groups_domain_id_name")),
    )
    op.create_table(
        "group_members",
        sa.Column("group_id", _name(64), nullable=False),
        sa.Column("user_id", _name(64), nullable=False),
        _fk("group_members", "group_id", "groups"),
        _fk("group_members", "user_id", "users"),
        sa.PrimaryKeyConstraint("group_id", "user_id", name=op.f("pk_group_members")),
    )
    op.create_index(op.f("ix_group_members_user_id"), "group_members", ["user_id"])
    with op.batch_alter_table("roles") as batch:
        batch.add_column(sa.Column("domain_id", _name(64), nullable=False,
                                   server_default=""))
        batch.add_column(sa.Column("description", sa.Text(), nullable=True))
        batch.drop_constraint(op.f("uq_roles_name"), type_="unique")
        batch.create_unique_constraint(op.f("uq_roles_name_domain_id"), ["name", "domain_id"])
    with op.batch_alter_table("roles") as batch:
        batch.alter_column("domain_id", server_default=None, existing_type=_name(64),
                           existing_nullable=False)
    op.create_table(
        "implied_roles",
        sa.Column("prior_role_id", _name(64), nullable=False),
        sa.Column("implied_role_id", _name(64), nullable=False),
        _fk("implied_roles", "prior_role_id", "roles"),
        _fk("implied_roles", "implied_role_id", "roles"),
        sa.PrimaryKeyConstraint("prior_role_id", "implied_role_id",
                                name=op.f("pk_implied_roles")),
    )
    op.create_table(
        "role_assignments",
        sa.Column("actor_type", _name(8), nullable=False),
        sa.Column("actor_id", _name(64), nullable=False),
        sa.Column("target_type", _name(8), nullable=False),
        sa.Column("target_id", _name(64), nullable=False),
        sa.Column("role_id", _name(64), nullable=False),
        sa.Column("inherited", sa.Boolean(), nullable=False),
        _fk("role_assignments", "role_id", "roles"),
        sa.PrimaryKeyConstraint("actor_type", "actor_id", "target_type", "target_id",
                                "role_id", "inherited", name=op.f("pk_role_assignments")),
    )
    op.create_index(op.f("ix_role_assignments_actor_id"), "role_assignments", ["actor_id"])
    op.create_index(op.f("ix_role_assignments_target_id"), "role_assignments", ["target_id"])
    op.execute(
        "INSERT INTO role_assignments (actor_type, actor_id, target_type, target_id, "
        "role_id, inherited) SELECT 'user', user_id, 'project', project_id, role_id, "
        f"{'false' if op.get_bind().dialect.name == 'postgresql' else '0'} "
        "FROM assignments")
    op.drop_table("assignments")
    op.create_table(
        "user_revocations",
        sa.Column("user_id", _name(64), nullable=False),
        sa.Column("issued_before", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_revocations")),
    )
    _catalog()
    _credentials()


def _catalog() -> None:
    op.create_table(
        "regions",
        sa.Column("id", _name(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("parent_region_id", _name(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regions")),
    )
    op.create_table(
        "services",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("type", _name(255), nullable=False),
        sa.Column("name", _name(255), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_services")),
    )
    op.create_index(op.f("ix_services_type"), "services", ["type"])
    op.create_table(
        "endpoints",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("service_id", _name(64), nullable=False),
        sa.Column("interface", _name(8), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("region_id", _name(255), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        _fk("endpoints", "service_id", "services"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_endpoints")),
    )
    op.create_index(op.f("ix_endpoints_service_id"), "endpoints", ["service_id"])


def _credentials() -> None:
    precise = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")
    op.create_table(
        "application_credentials",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("name", _name(255), nullable=False),
        sa.Column("user_id", _name(64), nullable=False),
        sa.Column("project_id", _name(64), nullable=True),
        sa.Column("secret_hash", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("expires_at", precise, nullable=True),
        sa.Column("unrestricted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        _fk("application_credentials", "user_id", "users"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_application_credentials")),
        sa.UniqueConstraint("user_id", "name",
                            name=op.f("uq_application_credentials_user_id_name")),
    )
    op.create_table(
        "application_credential_roles",
        sa.Column("application_credential_id", _name(64), nullable=False),
        sa.Column("role_id", _name(64), nullable=False),
        _fk("application_credential_roles", "application_credential_id",
            "application_credentials"),
        _fk("application_credential_roles", "role_id", "roles"),
        sa.PrimaryKeyConstraint("application_credential_id", "role_id",
                                name=op.f("pk_application_credential_roles")),
    )
    op.create_table(
        "access_rules",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("user_id", _name(64), nullable=False),
        sa.Column("service", _name(64), nullable=False),
        sa.Column("path", _name(225), nullable=False),
        sa.Column("method", _name(16), nullable=False),
        _fk("access_rules", "user_id", "users"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_access_rules")),
        sa.UniqueConstraint("user_id", "service", "path", "method",
                            name=op.f("uq_access_rules_user_id_service_path_method")),
    )
    op.create_table(
        "application_credential_access_rules",
        sa.Column("application_credential_id", _name(64), nullable=False),
        sa.Column("access_rule_id", _name(64), nullable=False),
        _fk("application_credential_access_rules", "application_credential_id",
            "application_credentials"),
        _fk("application_credential_access_rules", "access_rule_id", "access_rules", None),
        sa.PrimaryKeyConstraint("application_credential_id", "access_rule_id",
                                name=op.f("pk_application_credential_access_rules")),
    )
    op.create_index(op.f("ix_application_credential_access_rules_access_rule_id"),
                    "application_credential_access_rules", ["access_rule_id"])
    op.create_table(
        "credentials",
        sa.Column("id", _name(64), nullable=False),
        sa.Column("user_id", _name(64), nullable=False),
        sa.Column("project_id", _name(64), nullable=True),
        sa.Column("type", _name(255), nullable=False),
        sa.Column("encrypted_blob", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        _fk("credentials", "user_id", "users"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credentials")),
    )
    op.create_index(op.f("ix_credentials_user_id"), "credentials", ["user_id"])


def downgrade() -> None:
    raise NotImplementedError("the identity database does not downgrade below 0002")
