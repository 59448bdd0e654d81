"""The network database: networks, subnets, ports (with their addresses and bindings),
QoS policies and their rules. The network service's alone: no other service reads it.

A port has one ACTIVE binding at all times (host ``''`` while unbound, as
Neutron's ml2 keeps it) and any number of INACTIVE ones on other hosts (the
port-bindings extension, for live migration). The port's ``binding:*``
attributes are its ACTIVE binding's.
"""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()

UUID = 36


def _id() -> sa.Column:
    return sa.Column("id", columns.name(UUID), primary_key=True)


def _owned() -> list[sa.Column]:
    return [sa.Column("name", columns.name(255), nullable=False, server_default=""),
            sa.Column("description", columns.name(255), nullable=False, server_default=""),
            sa.Column("project_id", columns.name(255), nullable=False, index=True),
            sa.Column("revision_number", sa.Integer, nullable=False, server_default="0"),
            *columns.timestamps()]


qos_policies = sa.Table(
    "qos_policies",
    metadata,
    _id(),
    *_owned(),
    sa.Column("shared", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_default", sa.Boolean, nullable=False, server_default=sa.false()),
)

qos_rules = sa.Table(
    "qos_rules",
    metadata,
    _id(),
    sa.Column("policy_id", columns.name(UUID),
              sa.ForeignKey("qos_policies.id", ondelete="CASCADE"), nullable=False, index=True),
    # minimum_bandwidth, minimum_packet_rate, bandwidth_limit, dscp_marking
    sa.Column("type", columns.name(32), nullable=False),
    sa.Column("direction", columns.name(16), nullable=False, server_default=""),
    # The rule's numbers: min_kbps, min_kpps, max_kbps, max_burst_kbps or dscp_mark.
    sa.Column("value", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("burst", sa.BigInteger, nullable=False, server_default="0"),
    # Neutron keeps one rule of a type per direction in a policy.
    sa.UniqueConstraint("policy_id", "type", "direction"),
)

networks = sa.Table(
    "networks",
    metadata,
    _id(),
    *_owned(),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("shared", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("external", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_default", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("port_security_enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("mtu", sa.Integer, nullable=False, server_default="1500"),
    sa.Column("network_type", columns.name(32), nullable=False),
    sa.Column("physical_network", columns.name(64), nullable=True),
    sa.Column("segmentation_id", sa.Integer, nullable=True),
    # "flat:physnet1", "vlan:physnet1:100", "vxlan:5001": no two networks share a segment
    # (NULL for "local" networks, which have none).
    sa.Column("segment_key", columns.name(128), nullable=True, unique=True),
    sa.Column("qos_policy_id", columns.name(UUID), sa.ForeignKey("qos_policies.id"),
              nullable=True, index=True),
)

subnets = sa.Table(
    "subnets",
    metadata,
    _id(),
    *_owned(),
    sa.Column("network_id", columns.name(UUID),
              sa.ForeignKey("networks.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("cidr", columns.name(64), nullable=False),
    sa.Column("gateway_ip", columns.name(64), nullable=True),
    sa.Column("enable_dhcp", sa.Boolean, nullable=False, server_default=sa.true()),
)

ports = sa.Table(
    "ports",
    metadata,
    _id(),
    *_owned(),
    sa.Column("network_id", columns.name(UUID), sa.ForeignKey("networks.id"), nullable=False,
              index=True),
    sa.Column("mac_address", columns.name(32), nullable=False),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("status", columns.name(16), nullable=False),
    sa.Column("device_id", columns.name(255), nullable=False, server_default="", index=True),
    sa.Column("device_owner", columns.name(255), nullable=False, server_default=""),
    sa.Column("vnic_type", columns.name(32), nullable=False, server_default="normal"),
    sa.Column("port_security_enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("qos_policy_id", columns.name(UUID), sa.ForeignKey("qos_policies.id"),
              nullable=True, index=True),
    sa.UniqueConstraint("network_id", "mac_address"),
)

ip_allocations = sa.Table(
    "ip_allocations",
    metadata,
    sa.Column("port_id", columns.name(UUID), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("subnet_id", columns.name(UUID),
              sa.ForeignKey("subnets.id", ondelete="CASCADE"), nullable=False),
    sa.Column("ip_address", columns.name(64), nullable=False),
    sa.PrimaryKeyConstraint("subnet_id", "ip_address"),
)

port_bindings = sa.Table(
    "port_bindings",
    metadata,
    sa.Column("port_id", columns.name(UUID), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("host", columns.name(255), nullable=False),
    sa.Column("status", columns.name(16), nullable=False),   # ACTIVE or INACTIVE
    sa.Column("vnic_type", columns.name(32), nullable=False),
    sa.Column("vif_type", columns.name(32), nullable=False),
    sa.Column("profile", sa.Text, nullable=False),   # a JSON object
    sa.Column("vif_details", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("port_id", "host"),
)
