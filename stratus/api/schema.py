"""The API database: what spans cells.

Cell mappings (where each cell's database and bus are, and whether it takes
new servers), host and instance mappings (which cell holds a host or a server),
flavors, server groups, host aggregates (availability zones) and request specs.
Each cell's own records live in its cell database (``stratus/cells/schema.py``).
"""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()


CELL0_UUID = "00000000-0000-0000-0000-000000000000"

cell_mappings = sa.Table(
    "cell_mappings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("name", columns.name(255), nullable=True),
    sa.Column("transport_url", sa.Text, nullable=False),
    sa.Column("database_connection", sa.Text, nullable=False),
    # Added by its own migration (0002): a disabled cell takes no new servers.
    sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
    *columns.timestamps(),
)

host_mappings = sa.Table(
    "host_mappings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=False,
              index=True),
    sa.Column("host", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

instance_mappings = sa.Table(
    "instance_mappings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("instance_uuid", columns.name(36), nullable=False, unique=True),
    # NULL until the server is scheduled (or buried in cell0).
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=True,
              index=True),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    sa.Column("user_id", columns.name(255), nullable=True),
    sa.Column("queued_for_delete", sa.Boolean, nullable=False, server_default=sa.false()),
    *columns.timestamps(),
)

flavors = sa.Table(
    "flavors",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("flavorid", columns.name(255), nullable=False, unique=True),
    sa.Column("name", columns.name(255), nullable=False, unique=True),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False, server_default="0"),
    sa.Column("swap", sa.Integer, nullable=False, server_default="0"),
    sa.Column("is_public", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("description", sa.Text, nullable=True),
    *columns.timestamps(),
    # Added by migration 0009 (Nova's, shown until compute API 2.102).
    sa.Column("rxtx_factor", sa.Float, nullable=False, server_default="1.0"),
)

flavor_extra_specs = sa.Table(
    "flavor_extra_specs",
    metadata,
    sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), primary_key=True),
    sa.Column("key", columns.name(255), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# Added by migration 0009: the projects that may see and boot a private flavor
# (os-flavor-access).
flavor_projects = sa.Table(
    "flavor_projects",
    metadata,
    sa.Column("flavor_id", sa.Integer, sa.ForeignKey("flavors.id"), primary_key=True),
    sa.Column("project_id", columns.name(255), primary_key=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

server_groups = sa.Table(
    "server_groups",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("name", columns.name(255), nullable=False),
    sa.Column("project_id", columns.name(255), nullable=False),
    sa.Column("user_id", columns.name(255), nullable=False),
    sa.Column("policy", sa.String(32), nullable=False),
    sa.Column("max_server_per_host", sa.Integer, nullable=True),
    *columns.timestamps(),
)

server_group_members = sa.Table(
    "server_group_members",
    metadata,
    sa.Column("group_id", sa.Integer, sa.ForeignKey("server_groups.id"), primary_key=True),
    sa.Column("instance_uuid", columns.name(36), primary_key=True),
)

aggregates = sa.Table(
    "aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    # The same uuid is the Placement aggregate its hosts' providers are put in.
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("name", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

aggregate_hosts = sa.Table(
    "aggregate_hosts",
    metadata,
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), primary_key=True),
    sa.Column("host", columns.name(255), primary_key=True),
)

aggregate_metadata = sa.Table(
    "aggregate_metadata",
    metadata,
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), primary_key=True),
    sa.Column("key", columns.name(255), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

request_specs = sa.Table(
    "request_specs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("instance_uuid", columns.name(36), nullable=False, unique=True),
    # The RequestSpec as versioned JSON: moves re-read it to ask the same question again.
    sa.Column("spec", sa.Text, nullable=False),
    *columns.timestamps(),
    # Added by migration 0012 (bootcpu): the spec's flavor's vCPUs and RAM, written with
    # the spec, so a quota check sums a project's in SQL instead of parsing every spec.
    sa.Column("vcpus", sa.Integer, nullable=True),
    sa.Column("memory_mb", sa.Integer, nullable=True),
)

# Added by migration 0003: a server the API accepted that no cell holds yet (Nova's
# build request). The API reads it until the conductor records the server in a cell.
build_requests = sa.Table(
    "build_requests",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("instance_uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    sa.Column("user_id", columns.name(255), nullable=False),
    sa.Column("name", columns.name(255), nullable=False, index=True),
    # Added by migration 0010: what the boot asked for beyond the name (JSON: metadata,
    # tags, description, access addresses, reservation id...), shown while no cell
    # holds the server and copied into its cell row by the conductor.
    sa.Column("instance", sa.Text, nullable=True),
    *columns.timestamps(),
    sa.Index(None, "created_at", "instance_uuid"),   # GET /servers: the default order
)

# Added by migration 0004: the ports of each server, in the order it got them, and
# whether the port is the user's (kept, unbound, when the server goes) or was made
# for the server from a network (deleted with it). The network service says which
# ports a server has (device_id); this says what to do with them.
instance_ports = sa.Table(
    "instance_ports",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("instance_uuid", columns.name(36), nullable=False, index=True),
    sa.Column("port_id", columns.name(36), nullable=False, unique=True),
    sa.Column("preserve_on_delete", sa.Boolean, nullable=False),
    # The requested_networks entry it was made for (None: attached later, or brought).
    sa.Column("position", sa.Integer, nullable=True),
    *columns.timestamps(),
)

# Added by migration 0005: users' SSH (or x509) public keys, by name per user.
key_pairs = sa.Table(
    "key_pairs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", columns.name(255), nullable=False),
    sa.Column("user_id", columns.name(255), nullable=False),
    sa.Column("fingerprint", sa.String(255), nullable=False),
    sa.Column("public_key", sa.Text, nullable=False),
    sa.Column("type", sa.String(10), nullable=False),
    *columns.timestamps(),
    sa.UniqueConstraint("user_id", "name"),
)

# Added by migration 0006: the last scheduling decisions (the conductor writes one per
# selection it asked for, and prunes to the newest few hundred; the console reads them).
scheduling_decisions = sa.Table(
    "scheduling_decisions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    # The first server of the request, and how many it asked for.
    sa.Column("instance_uuid", columns.name(36), nullable=False),
    sa.Column("num_instances", sa.Integer, nullable=False),
    # What asked: build, resize, migration, live-migration, evacuation, unshelve.
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("flavor", columns.name(255), nullable=True),
    sa.Column("project_id", columns.name(255), nullable=True),
    # "chosen" (hosts says where) or "no_valid_host"/"error" (reason says why).
    sa.Column("outcome", sa.String(32), nullable=False),
    sa.Column("hosts", sa.Text, nullable=True),         # JSON: the chosen host per server
    sa.Column("alternates", sa.Integer, nullable=False),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    sa.Column("reason", sa.Text, nullable=True),
)

# Added by migration 0008: quota limits set by an admin, per project and per quota
# class (only the class "default" is used: it overrides the [quota] options, and a
# project's own limit overrides it). A resource without a row takes the next default.
quotas = sa.Table(
    "quotas",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("project_id", columns.name(255), nullable=False),
    sa.Column("resource", columns.name(255), nullable=False),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *columns.timestamps(),
    sa.UniqueConstraint("project_id", "resource"),
)

# Added by migration 0011 (compute_interop_user_quotas): a user's own limits within a
# project (Nova's project_user_quotas), one row per resource that was set.
project_user_quotas = sa.Table(
    "project_user_quotas",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("project_id", columns.name(255), nullable=False),
    sa.Column("user_id", columns.name(255), nullable=False),
    sa.Column("resource", columns.name(255), nullable=False),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *columns.timestamps(),
    sa.UniqueConstraint("project_id", "user_id", "resource"),
)

quota_classes = sa.Table(
    "quota_classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("class_name", columns.name(255), nullable=False),
    sa.Column("resource", columns.name(255), nullable=False),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *columns.timestamps(),
    sa.UniqueConstraint("class_name", "resource"),
)
