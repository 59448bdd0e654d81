"""The network database: networks, subnets, ports, addresses, bindings, QoS.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _name(length: int) -> sa.String:
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def _owned() -> list[sa.Column]:
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
    op.create_table(
        "qos_policies", *_owned(),
        sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("is_default", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_qos_policies")),
    )
    op.create_index(op.f("ix_qos_policies_project_id"), "qos_policies", ["project_id"])
    op.create_table(
        "qos_rules",
        sa.Column("id", _name(36), nullable=False),
        sa.Column("policy_id", _name(36), nullable=False),
        sa.Column("type", _name(32), nullable=False),
        sa.Column("direction", _name(16), nullable=False, server_default=""),
        sa.Column("value", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("burst", sa.BigInteger(), nullable=False, server_default="0"),
        sa.ForeignKeyConstraint(["policy_id"], ["qos_policies.id"], ondelete="CASCADE",
                                name=op.f("fk_qos_rules_policy_id_qos_policies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_qos_rules")),
        sa.UniqueConstraint("policy_id", "type", "direction",
                            name=op.f("uq_qos_rules_policy_id_type_direction")),
    )
    op.create_index(op.f("ix_qos_rules_policy_id"), "qos_rules", ["policy_id"])
    op.create_table(
        "networks", *_owned(),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("external", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("is_default", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("port_security_enabled", sa.Boolean(), nullable=False,
                  server_default=sa.true()),
        sa.Column("mtu", sa.Integer(), nullable=False, server_default="1500"),
        sa.Column("network_type", _name(32), nullable=False),
        sa.Column("physical_network", _name(64), nullable=True),
        sa.Column("segmentation_id", sa.Integer(), nullable=True),
        sa.Column("segment_key", _name(128), nullable=True),
        sa.Column("qos_policy_id", _name(36), nullable=True),
        sa.ForeignKeyConstraint(["qos_policy_id"], ["qos_policies.id"],
                                name=op.f("fk_networks_qos_policy_id_qos_policies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_networks")),
        sa.UniqueConstraint("segment_key", name=op.f("uq_networks_segment_key")),
    )
    op.create_index(op.f("ix_networks_project_id"), "networks", ["project_id"])
    op.create_index(op.f("ix_networks_qos_policy_id"), "networks", ["qos_policy_id"])
    op.create_table(
        "subnets", *_owned(),
        sa.Column("network_id", _name(36), nullable=False),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.Column("cidr", _name(64), nullable=False),
        sa.Column("gateway_ip", _name(64), nullable=True),
        sa.Column("enable_dhcp", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], ondelete="CASCADE",
                                name=op.f("fk_subnets_network_id_networks")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subnets")),
    )
    op.create_index(op.f("ix_subnets_project_id"), "subnets", ["project_id"])
    op.create_index(op.f("ix_subnets_network_id"), "subnets", ["network_id"])
    op.create_table(
        "ports", *_owned(),
        sa.Column("network_id", _name(36), nullable=False),
        sa.Column("mac_address", _name(32), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("status", _name(16), nullable=False),
        sa.Column("device_id", _name(255), nullable=False, server_default=""),
        sa.Column("device_owner", _name(255), nullable=False, server_default=""),
        sa.Column("vnic_type", _name(32), nullable=False, server_default="normal"),
        sa.Column("port_security_enabled", sa.Boolean(), nullable=False,
                  server_default=sa.true()),
        sa.Column("qos_policy_id", _name(36), nullable=True),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"],
                                name=op.f("fk_ports_network_id_networks")),
        sa.ForeignKeyConstraint(["qos_policy_id"], ["qos_policies.id"],
                                name=op.f("fk_ports_qos_policy_id_qos_policies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ports")),
        sa.UniqueConstraint("network_id", "mac_address",
                            name=op.f("uq_ports_network_id_mac_address")),
    )
    op.create_index(op.f("ix_ports_project_id"), "ports", ["project_id"])
    op.create_index(op.f("ix_ports_network_id"), "ports", ["network_id"])
    op.create_index(op.f("ix_ports_device_id"), "ports", ["device_id"])
    op.create_index(op.f("ix_ports_qos_policy_id"), "ports", ["qos_policy_id"])
    op.create_table(
        "ip_allocations",
        sa.Column("port_id", _name(36), nullable=False),
        sa.Column("subnet_id", _name(36), nullable=False),
        sa.Column("ip_address", _name(64), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_ip_allocations_port_id_ports")),
        sa.ForeignKeyConstraint(["subnet_id"], ["subnets.id"], ondelete="CASCADE",
                                name=op.f("fk_ip_allocations_subnet_id_subnets")),
        sa.PrimaryKeyConstraint("subnet_id", "ip_address", name=op.f("pk_ip_allocations")),
    )
    op.create_index(op.f("ix_ip_allocations_port_id"), "ip_allocations", ["port_id"])
    op.create_table(
        "port_bindings",
        sa.Column("port_id", _name(36), nullable=False),
        sa.Column("host", _name(255), nullable=False),
        sa.Column("status", _name(16), nullable=False),
        sa.Column("vnic_type", _name(32), nullable=False),
        sa.Column("vif_type", _name(32), nullable=False),
        sa.Column("profile", sa.Text(), nullable=False),
        sa.Column("vif_details", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["port_id"], ["ports.id"], ondelete="CASCADE",
                                name=op.f("fk_port_bindings_port_id_ports")),
        sa.PrimaryKeyConstraint("port_id", "host", name=op.f("pk_port_bindings")),
    )


def downgrade() -> None:
    for table in ("port_bindings", "ip_allocations", "ports", "subnets", "networks",
                  "qos_rules", "qos_policies"):
        op.drop_table(table)
