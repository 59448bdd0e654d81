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
    # migration 0002:
    sa.Column("ipv6_ra_mode", columns.name(16), nullable=True),
    sa.Column("ipv6_address_mode", columns.name(16), nullable=True),
    sa.Column("subnetpool_id", columns.name(UUID), nullable=True, index=True),
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

# ---- subnet details (migration 0002) ----------------------------------------------------

allocation_pools = sa.Table(
    "allocation_pools",
    metadata,
    sa.Column("subnet_id", columns.name(UUID),
              sa.ForeignKey("subnets.id", ondelete="CASCADE"), nullable=False),
    sa.Column("first_ip", columns.name(64), nullable=False),
    sa.Column("last_ip", columns.name(64), nullable=False),
    sa.PrimaryKeyConstraint("subnet_id", "first_ip"),
)

dns_nameservers = sa.Table(
    "dns_nameservers",
    metadata,
    sa.Column("subnet_id", columns.name(UUID),
              sa.ForeignKey("subnets.id", ondelete="CASCADE"), nullable=False),
    sa.Column("address", columns.name(64), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),   # the order they were given in
    sa.PrimaryKeyConstraint("subnet_id", "address"),
)

subnet_routes = sa.Table(
    "subnet_routes",
    metadata,
    sa.Column("subnet_id", columns.name(UUID),
              sa.ForeignKey("subnets.id", ondelete="CASCADE"), nullable=False),
    sa.Column("destination", columns.name(64), nullable=False),
    sa.Column("nexthop", columns.name(64), nullable=False),
    sa.PrimaryKeyConstraint("subnet_id", "destination", "nexthop"),
)

# ---- security groups (migration 0002) ---------------------------------------------------

security_groups = sa.Table(
    "security_groups",
    metadata,
    _id(),
    *_owned(),
    sa.Column("stateful", sa.Boolean, nullable=False, server_default=sa.true()),
)

# Which group is each project's "default" one: the primary key makes two concurrent
# first uses of a project collide instead of making two defaults.
default_security_groups = sa.Table(
    "default_security_groups",
    metadata,
    sa.Column("project_id", columns.name(255), primary_key=True),
    sa.Column("security_group_id", columns.name(UUID),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False,
              unique=True),
)

security_group_rules = sa.Table(
    "security_group_rules",
    metadata,
    _id(),
    sa.Column("security_group_id", columns.name(UUID),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    sa.Column("description", columns.name(255), nullable=False, server_default=""),
    sa.Column("direction", columns.name(16), nullable=False),
    sa.Column("ethertype", columns.name(8), nullable=False),
    sa.Column("protocol", columns.name(40), nullable=True),
    sa.Column("port_range_min", sa.Integer, nullable=True),
    sa.Column("port_range_max", sa.Integer, nullable=True),
    sa.Column("remote_ip_prefix", columns.name(64), nullable=True),
    sa.Column("remote_group_id", columns.name(UUID),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=True,
              index=True),
    sa.Column("remote_address_group_id", columns.name(UUID), nullable=True),
    # What makes two rules the same rule (rules.rule_key): unique, so two concurrent
    # creators of one rule cannot both succeed.
    sa.Column("rule_key", columns.name(255), nullable=False, unique=True),
    sa.Column("revision_number", sa.Integer, nullable=False, server_default="0"),
    *columns.timestamps(),
)

port_security_groups = sa.Table(
    "port_security_groups",
    metadata,
    sa.Column("port_id", columns.name(UUID), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("security_group_id", columns.name(UUID),
              sa.ForeignKey("security_groups.id"), nullable=False, index=True),
    sa.PrimaryKeyConstraint("port_id", "security_group_id"),
)

allowed_address_pairs = sa.Table(
    "allowed_address_pairs",
    metadata,
    sa.Column("port_id", columns.name(UUID), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("ip_address", columns.name(64), nullable=False),
    sa.Column("mac_address", columns.name(32), nullable=False),
    sa.PrimaryKeyConstraint("port_id", "ip_address", "mac_address"),
)

extra_dhcp_opts = sa.Table(
    "extra_dhcp_opts",
    metadata,
    sa.Column("port_id", columns.name(UUID), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("opt_name", columns.name(64), nullable=False),
    sa.Column("opt_value", columns.name(255), nullable=False),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.PrimaryKeyConstraint("port_id", "opt_name", "ip_version"),
)

# ---- quotas and tags (migration 0002) ---------------------------------------------------

network_quotas = sa.Table(
    "network_quotas",
    metadata,
    sa.Column("project_id", columns.name(255), nullable=False),
    sa.Column("resource", columns.name(64), nullable=False),
    sa.Column("limit", sa.Integer, nullable=False),
    sa.PrimaryKeyConstraint("project_id", "resource"),
)

# standard-attr-tag: any resource's tags (networks, subnets, ports, routers, ...).
resource_tags = sa.Table(
    "resource_tags",
    metadata,
    sa.Column("resource_id", columns.name(UUID), nullable=False),
    sa.Column("tag", columns.name(255), nullable=False),
    sa.PrimaryKeyConstraint("resource_id", "tag"),
)

# ---- sharing (migration 0002) ----------------------------------------------------------

# Neutron's role-based access: an object (network, QoS policy) shared with one project or
# with every project ("*"), or a network made external for them. ``shared`` and
# ``external`` columns mirror the "*" entries, which the owner's flag creates.
rbac_policies = sa.Table(
    "rbac_policies",
    metadata,
    _id(),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    sa.Column("object_type", columns.name(32), nullable=False),
    sa.Column("object_id", columns.name(UUID), nullable=False, index=True),
    sa.Column("target_project", columns.name(255), nullable=False),
    sa.Column("action", columns.name(32), nullable=False),
    sa.Column("revision_number", sa.Integer, nullable=False, server_default="0"),
    *columns.timestamps(),
    sa.UniqueConstraint("object_type", "object_id", "action", "target_project"),
)

# ---- routers and floating IPs (migration 0002) -----------------------------------------

routers = sa.Table(
    "routers",
    metadata,
    _id(),
    *_owned(),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("status", columns.name(16), nullable=False, server_default="ACTIVE"),
    # The gateway: a port on an external network (device_owner network:router_gateway).
    sa.Column("gw_port_id", columns.name(UUID), sa.ForeignKey("ports.id"), nullable=True,
              unique=True),
    sa.Column("enable_snat", sa.Boolean, nullable=False, server_default=sa.true()),
)

# A router's interfaces: ports it owns on the subnets it routes between.
router_ports = sa.Table(
    "router_ports",
    metadata,
    sa.Column("router_id", columns.name(UUID),
              sa.ForeignKey("routers.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("port_id", columns.name(UUID), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.PrimaryKeyConstraint("port_id"),
)

router_routes = sa.Table(
    "router_routes",
    metadata,
    sa.Column("router_id", columns.name(UUID),
              sa.ForeignKey("routers.id", ondelete="CASCADE"), nullable=False),
    sa.Column("destination", columns.name(64), nullable=False),
    sa.Column("nexthop", columns.name(64), nullable=False),
    sa.PrimaryKeyConstraint("router_id", "destination", "nexthop"),
)

floating_ips = sa.Table(
    "floating_ips",
    metadata,
    _id(),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    sa.Column("description", columns.name(255), nullable=False, server_default=""),
    sa.Column("revision_number", sa.Integer, nullable=False, server_default="0"),
    *columns.timestamps(),
    sa.Column("floating_network_id", columns.name(UUID), sa.ForeignKey("networks.id"),
              nullable=False, index=True),
    # The address itself is held by a port of the external network (device_owner
    # network:floatingip), so the subnet's allocations keep it from anyone else.
    sa.Column("floating_port_id", columns.name(UUID), sa.ForeignKey("ports.id"),
              nullable=False, unique=True),
    sa.Column("floating_ip_address", columns.name(64), nullable=False),
    sa.Column("fixed_port_id", columns.name(UUID), sa.ForeignKey("ports.id"), nullable=True,
              index=True),
    sa.Column("fixed_ip_address", columns.name(64), nullable=True),
    sa.Column("router_id", columns.name(UUID), sa.ForeignKey("routers.id"), nullable=True,
              index=True),
    sa.Column("status", columns.name(16), nullable=False, server_default="DOWN"),
    # One floating IP per fixed address (NULLs, unassociated ones, never collide).
    sa.UniqueConstraint("fixed_port_id", "fixed_ip_address"),
)

# ---- subnet pools and address scopes (migration 0002) ----------------------------------

address_scopes = sa.Table(
    "address_scopes",
    metadata,
    _id(),
    *_owned(),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("shared", sa.Boolean, nullable=False, server_default=sa.false()),
)

subnet_pools = sa.Table(
    "subnet_pools",
    metadata,
    _id(),
    *_owned(),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("default_prefixlen", sa.Integer, nullable=False),
    sa.Column("min_prefixlen", sa.Integer, nullable=False),
    sa.Column("max_prefixlen", sa.Integer, nullable=False),
    sa.Column("shared", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_default", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("default_quota", sa.Integer, nullable=True),
    sa.Column("address_scope_id", columns.name(UUID), sa.ForeignKey("address_scopes.id"),
              nullable=True, index=True),
)

subnet_pool_prefixes = sa.Table(
    "subnet_pool_prefixes",
    metadata,
    sa.Column("subnetpool_id", columns.name(UUID),
              sa.ForeignKey("subnet_pools.id", ondelete="CASCADE"), nullable=False),
    sa.Column("cidr", columns.name(64), nullable=False),
    sa.PrimaryKeyConstraint("subnetpool_id", "cidr"),
)

# ---- metering (migration 0003) ------------------------------------------------------------

metering_labels = sa.Table(
    "metering_labels",
    metadata,
    _id(),
    *_owned(),
    sa.Column("shared", sa.Boolean, nullable=False, server_default=sa.false()),
)

metering_label_rules = sa.Table(
    "metering_label_rules",
    metadata,
    _id(),
    sa.Column("metering_label_id", columns.name(UUID),
              sa.ForeignKey("metering_labels.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("direction", columns.name(16), nullable=False),
    sa.Column("excluded", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("remote_ip_prefix", columns.name(64), nullable=True),
    sa.Column("source_ip_prefix", columns.name(64), nullable=True),
    sa.Column("destination_ip_prefix", columns.name(64), nullable=True),
    *columns.timestamps(),
)
