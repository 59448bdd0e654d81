"""Subnet details (allocation pools, DNS servers, host routes, IPv6 modes), security
groups with their rules and port bindings, port address pairs and DHCP options,
network quotas, resource tags, RBAC policies, routers and floating IPs, subnet pools
and address scopes.

Revision ID: 0002
Revises: 0001
"""

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


def _subnet_child(table: str, *cols: sa.Column, pk: list[str]) -> None:
    op.create_table(
        table,
        sa.Column("subnet_id", _name(36), nullable=False),
        *cols,
        sa.ForeignKeyConstraint(["subnet_id"], ["subnets.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_subnet_id_subnets")),
        sa.PrimaryKeyConstraint(*pk, name=op.f(f"pk_{table}")),
    )


def _port_child(table: str, *cols: sa.Column, pk: list[str]) -> None:
    op.create_table(
        table,
        sa.Column("port_id", _name(36), nullable=False),
        *cols,
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f(f"fk_{table}_port_id_ports")),
        sa.PrimaryKeyConstraint(*pk, name=op.f(f"pk_{table}")),
    )


def owned() -> list[sa.Column]:
    return [
        sa.Column("id", _name(36), nullable=False),
        sa.Column("name", _name(255), nullable=False, server_default=""),
        sa.Column("description", _name(255), nullable=False, server_default=""),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("subnets") as batch:
        batch.add_column(sa.Column("ipv6_ra_mode", _name(16), nullable=True))
        batch.add_column(sa.Column("ipv6_address_mode", _name(16), nullable=True))
        batch.add_column(sa.Column("subnetpool_id", _name(36), nullable=True))
        batch.create_index(op.f("ix_subnets_subnetpool_id"), ["subnetpool_id"])

    _subnet_child("allocation_pools",
                  sa.Column("first_ip", _name(64), nullable=False),
                  sa.Column("last_ip", _name(64), nullable=False),
                  pk=["subnet_id", "first_ip"])
    _subnet_child("dns_nameservers",
                  sa.Column("address", _name(64), nullable=False),
                  sa.Column("position", sa.Integer(), nullable=False),
                  pk=["subnet_id", "address"])
    _subnet_child("subnet_routes",
                  sa.Column("destination", _name(64), nullable=False),
                  sa.Column("nexthop", _name(64), nullable=False),
                  pk=["subnet_id", "destination", "nexthop"])

    op.create_table(
        "security_groups",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("name", _name(255), nullable=False, server_default=""),
        sa.Column("description", _name(255), nullable=False, server_default=""),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("stateful", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_security_groups")),
    )
    op.create_index(op.f("ix_security_groups_project_id"), "security_groups",
                    ["project_id"])
    op.create_table(
        "default_security_groups",
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("security_group_id", _name(36), nullable=False),
        sa.ForeignKeyConstraint(
            ["security_group_id"], ["security_groups.id"], ondelete="CASCADE",
            name=op.f("fk_default_security_groups_security_group_id_security_groups")),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_default_security_groups")),
        sa.UniqueConstraint("security_group_id",
                            name=op.f("uq_default_security_groups_security_group_id")),
    )
    op.create_table(
        "security_group_rules",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("security_group_id", _name(36), nullable=False),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("description", _name(255), nullable=False, server_default=""),
        sa.Column("direction", _name(16), nullable=False),
        sa.Column("ethertype", _name(8), nullable=False),
        sa.Column("protocol", _name(40), nullable=True),
        sa.Column("port_range_min", sa.Integer(), nullable=True),
        sa.Column("port_range_max", sa.Integer(), nullable=True),
        sa.Column("remote_ip_prefix", _name(64), nullable=True),
        sa.Column("remote_group_id", _name(36), nullable=True),
        sa.Column("remote_address_group_id", _name(36), nullable=True),
        sa.Column("rule_key", _name(255), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["security_group_id"], ["security_groups.id"], ondelete="CASCADE",
            name=op.f("fk_security_group_rules_security_group_id_security_groups")),
        sa.ForeignKeyConstraint(
            ["remote_group_id"], ["security_groups.id"], ondelete="CASCADE",
            name=op.f("fk_security_group_rules_remote_group_id_security_groups")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_security_group_rules")),
        sa.UniqueConstraint("rule_key", name=op.f("uq_security_group_rules_rule_key")),
    )
    for column in ("security_group_id", "project_id", "remote_group_id"):
        op.create_index(op.f(f"ix_security_group_rules_{column}"), "security_group_rules",
                        [column])
    op.create_table(
        "port_security_groups",
        sa.Column("port_id", _name(36), nullable=False),
        sa.Column("security_group_id", _name(36), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_port_security_groups_port_id_ports")),
        sa.ForeignKeyConstraint(
            ["security_group_id"], ["security_groups.id"],
            name=op.f("fk_port_security_groups_security_group_id_security_groups")),
        sa.PrimaryKeyConstraint("port_id", "security_group_id",
                                name=op.f("pk_port_security_groups")),
    )
    op.create_index(op.f("ix_port_security_groups_security_group_id"),
                    "port_security_groups", ["security_group_id"])
    _port_child("allowed_address_pairs",
                sa.Column("ip_address", _name(64), nullable=False),
                sa.Column("mac_address", _name(32), nullable=False),
                pk=["port_id", "ip_address", "mac_address"])
    _port_child("extra_dhcp_opts",
                sa.Column("opt_name", _name(64), nullable=False),
                sa.Column("opt_value", _name(255), nullable=False),
                sa.Column("ip_version", sa.Integer(), nullable=False),
                pk=["port_id", "opt_name", "ip_version"])

    op.create_table(
        "network_quotas",
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("resource", _name(64), nullable=False),
        sa.Column("limit", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("project_id", "resource", name=op.f("pk_network_quotas")),
    )
    op.create_table(
        "resource_tags",
        sa.Column("resource_id", _name(36), nullable=False),
        sa.Column("tag", _name(255), nullable=False),
        sa.PrimaryKeyConstraint("resource_id", "tag", name=op.f("pk_resource_tags")),
    )


    op.create_table(
        "rbac_policies",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("object_type", _name(32), nullable=False),
        sa.Column("object_id", _name(36), nullable=False),
        sa.Column("target_project", _name(255), nullable=False),
        sa.Column("action", _name(32), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rbac_policies")),
        sa.UniqueConstraint(
            "object_type", "object_id", "action", "target_project",
            name=op.f("uq_rbac_policies_object_type_object_id_action_target_project")),
    )
    op.create_index(op.f("ix_rbac_policies_project_id"), "rbac_policies", ["project_id"])
    op.create_index(op.f("ix_rbac_policies_object_id"), "rbac_policies", ["object_id"])

    op.create_table(
        "routers", *owned(),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("status", _name(16), nullable=False, server_default="ACTIVE"),
        sa.Column("gw_port_id", _name(36), nullable=True),
        sa.Column("enable_snat", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.ForeignKeyConstraint(["gw_port_id"], ["ports.id"],
                                name=op.f("fk_routers_gw_port_id_ports")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routers")),
        sa.UniqueConstraint("gw_port_id", name=op.f("uq_routers_gw_port_id")),
    )
    op.create_index(op.f("ix_routers_project_id"), "routers", ["project_id"])
    op.create_table(
        "router_ports",
        sa.Column("router_id", _name(36), nullable=False),
        sa.Column("port_id", _name(36), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_ports_router_id_routers")),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_router_ports_port_id_ports")),
        sa.PrimaryKeyConstraint("port_id", name=op.f("pk_router_ports")),
    )
    op.create_index(op.f("ix_router_ports_router_id"), "router_ports", ["router_id"])
    op.create_table(
        "router_routes",
        sa.Column("router_id", _name(36), nullable=False),
        sa.Column("destination", _name(64), nullable=False),
        sa.Column("nexthop", _name(64), nullable=False),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"], ondelete="CASCADE",
                                name=op.f("fk_router_routes_router_id_routers")),
        sa.PrimaryKeyConstraint("router_id", "destination", "nexthop",
                                name=op.f("pk_router_routes")),
    )
    op.create_table(
        "floating_ips",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("project_id", _name(255), nullable=False),
        sa.Column("description", _name(255), nullable=False, server_default=""),
        sa.Column("revision_number", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("floating_network_id", _name(36), nullable=False),
        sa.Column("floating_port_id", _name(36), nullable=False),
        sa.Column("floating_ip_address", _name(64), nullable=False),
        sa.Column("fixed_port_id", _name(36), nullable=True),
        sa.Column("fixed_ip_address", _name(64), nullable=True),
        sa.Column("router_id", _name(36), nullable=True),
        sa.Column("status", _name(16), nullable=False, server_default="DOWN"),
        sa.ForeignKeyConstraint(["floating_network_id"], ["networks.id"],
                                name=op.f("fk_floating_ips_floating_network_id_networks")),
        sa.ForeignKeyConstraint(["floating_port_id"], ["ports.id"],
                                name=op.f("fk_floating_ips_floating_port_id_ports")),
        sa.ForeignKeyConstraint(["fixed_port_id"], ["ports.id"],
                                name=op.f("fk_floating_ips_fixed_port_id_ports")),
        sa.ForeignKeyConstraint(["router_id"], ["routers.id"],
                                name=op.f("fk_floating_ips_router_id_routers")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_floating_ips")),
        sa.UniqueConstraint("floating_port_id", name=op.f("uq_floating_ips_floating_port_id")),
        sa.UniqueConstraint("fixed_port_id", "fixed_ip_address",
                            name=op.f("uq_floating_ips_fixed_port_id_fixed_ip_address")),
    )
    for column in ("project_id", "floating_network_id", "fixed_port_id", "router_id"):
        op.create_index(op.f(f"ix_floating_ips_{column}"), "floating_ips", [column])

    op.create_table(
        "address_scopes", *owned(),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_address_scopes")),
    )
    op.create_index(op.f("ix_address_scopes_project_id"), "address_scopes", ["project_id"])
    op.create_table(
        "subnet_pools", *owned(),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.Column("default_prefixlen", sa.Integer(), nullable=False),
        sa.Column("min_prefixlen", sa.Integer(), nullable=False),
        sa.Column("max_prefixlen", sa.Integer(), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("is_default", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("default_quota", sa.Integer(), nullable=True),
        sa.Column("address_scope_id", _name(36), nullable=True),
        sa.ForeignKeyConstraint(["address_scope_id"], ["address_scopes.id"],
                                name=op.f("fk_subnet_pools_address_scope_id_address_scopes")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subnet_pools")),
    )
    op.create_index(op.f("ix_subnet_pools_project_id"), "subnet_pools", ["project_id"])
    op.create_index(op.f("ix_subnet_pools_address_scope_id"), "subnet_pools",
                    ["address_scope_id"])
    op.create_table(
        "subnet_pool_prefixes",
        sa.Column("subnetpool_id", _name(36), nullable=False),
        sa.Column("cidr", _name(64), nullable=False),
        sa.ForeignKeyConstraint(["subnetpool_id"], ["subnet_pools.id"], ondelete="CASCADE",
                                name=op.f("fk_subnet_pool_prefixes_subnetpool_id_subnet_pools")),
        sa.PrimaryKeyConstraint("subnetpool_id", "cidr", name=op.f("pk_subnet_pool_prefixes")),
    )


def downgrade() -> None:
    for table in ("subnet_pool_prefixes", "subnet_pools", "address_scopes", "floating_ips",
                  "router_routes", "router_ports", "routers", "rbac_policies",
                  "resource_tags", "network_quotas", "extra_dhcp_opts",
                  "allowed_address_pairs", "port_security_groups", "security_group_rules",
                  "default_security_groups", "security_groups", "subnet_routes",
                  "dns_nameservers", "allocation_pools"):
        op.drop_table(table)
    with op.batch_alter_table("subnets") as batch:
        batch.drop_index(op.f("ix_subnets_subnetpool_id"))
        batch.drop_column("subnetpool_id")
        batch.drop_column("ipv6_address_mode")
        batch.drop_column("ipv6_ra_mode")
