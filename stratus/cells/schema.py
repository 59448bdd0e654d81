"""A cell database: one per cell (and cell0, for servers that never got a host).

Services and their heartbeats, compute nodes, instances, and migrations. A
migration record is also a Placement consumer: during a move it holds the
source host's allocations while the instance's own consumer holds the
destination's (design document 004).
"""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()


services = sa.Table(
    "services",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("host", columns.name(255), nullable=False),
    sa.Column("binary", columns.name(255), nullable=False),
    sa.Column("topic", columns.name(255), nullable=True),
    sa.Column("report_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("disabled_reason", sa.String(255), nullable=True),
    sa.Column("forced_down", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("last_seen_up", sa.DateTime, nullable=True),
    # The RPC/message version the service speaks; callers skip calls it cannot take.
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
    *columns.timestamps(),
    sa.UniqueConstraint("host", "binary"),
)

compute_nodes = sa.Table(
    "compute_nodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    # Also the uuid of the node's root resource provider in Placement.
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("service_id", sa.Integer, sa.ForeignKey("services.id"), nullable=True),
    sa.Column("host", columns.name(255), nullable=False, index=True),
    sa.Column("hypervisor_hostname", columns.name(255), nullable=False, unique=True),
    sa.Column("hypervisor_type", sa.String(64), nullable=False),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("local_gb", sa.Integer, nullable=False),
    sa.Column("vcpus_used", sa.Integer, nullable=False, server_default="0"),
    sa.Column("memory_mb_used", sa.Integer, nullable=False, server_default="0"),
    sa.Column("local_gb_used", sa.Integer, nullable=False, server_default="0"),
    sa.Column("running_vms", sa.Integer, nullable=False, server_default="0"),
    *columns.timestamps(),
)

instances = sa.Table(
    "instances",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("name", columns.name(255), nullable=False, index=True),
    sa.Column("project_id", columns.name(255), nullable=False, index=True),
    sa.Column("user_id", columns.name(255), nullable=False),
    sa.Column("host", columns.name(255), nullable=True, index=True),
    sa.Column("node", columns.name(255), nullable=True),
    sa.Column("availability_zone", columns.name(255), nullable=True),
    sa.Column("flavor", sa.Text, nullable=False),            # JSON
    sa.Column("vm_state", sa.String(32), nullable=False),
    sa.Column("task_state", sa.String(64), nullable=True),
    sa.Column("power_state", sa.Integer, nullable=False, server_default="0"),
    sa.Column("fault", sa.Text, nullable=True),
    sa.Column("launched_at", sa.DateTime, nullable=True),
    sa.Column("deleted_at", sa.DateTime, nullable=True),
    # Added by migration 0002: what the server booted from and the key pair it got.
    sa.Column("image_ref", columns.name(36), nullable=True),
    sa.Column("key_name", columns.name(255), nullable=True),
    # Added by migration 0005 (the server lifecycle): what a user set on the server
    # (description, access addresses), its lock (``locked_by`` "owner" or "admin", None
    # while unlocked, Nova's values), how a multi-create named it (reservation id and
    # index), what it was given at boot (hostname, user data, config drive), when it was
    # soft-deleted (it then still holds its resources until reclaimed) and terminated,
    # and Nova's system metadata (JSON: the boot image's inheritable properties as
    # ``image_<key>``, ``image_base_image_ref``, the owner's names; a snapshot inherits
    # them).
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("access_ip_v4", sa.String(39), nullable=True),
    sa.Column("access_ip_v6", sa.String(39), nullable=True),
    sa.Column("locked_by", sa.String(16), nullable=True),
    sa.Column("locked_reason", sa.Text, nullable=True),
    sa.Column("reservation_id", columns.name(36), nullable=True),
    sa.Column("launch_index", sa.Integer, nullable=True),
    sa.Column("hostname", columns.name(255), nullable=True),
    sa.Column("user_data", sa.Text, nullable=True),
    sa.Column("config_drive", sa.String(255), nullable=True),
    sa.Column("soft_deleted_at", sa.DateTime, nullable=True),
    sa.Column("terminated_at", sa.DateTime, nullable=True),
    sa.Column("system_metadata", sa.Text, nullable=True),
    *columns.timestamps(),
    # GET /servers: its default order (created_at, uuid), for all and for a project, and
    # changes-since.
    sa.Index(None, "created_at", "uuid"),
    sa.Index(None, "project_id", "created_at", "uuid"),
    sa.Index(None, "updated_at"),
)

# Added by migration 0005: a server's metadata (Nova's instance_metadata: string keys and
# values of at most 255 characters) and its tags (Nova's tags, microversion 2.26).
instance_metadata = sa.Table(
    "instance_metadata",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("instance_uuid", columns.name(36), nullable=False),
    sa.Column("key", columns.name(255), nullable=False),
    sa.Column("value", sa.String(255), nullable=True),
    *columns.timestamps(),
    sa.UniqueConstraint("instance_uuid", "key"),
)

instance_tags = sa.Table(
    "instance_tags",
    metadata,
    sa.Column("instance_uuid", columns.name(36), primary_key=True),
    sa.Column("tag", columns.name(60), primary_key=True),
    sa.Index(None, "tag"),
)

migrations = sa.Table(
    "migrations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("instance_uuid", columns.name(36), nullable=False, index=True),
    sa.Column("migration_type", sa.String(32), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("source_compute", columns.name(255), nullable=True),
    sa.Column("dest_compute", columns.name(255), nullable=True),
    sa.Column("source_node", columns.name(255), nullable=True),
    sa.Column("dest_node", columns.name(255), nullable=True),
    sa.Column("old_flavor", sa.Text, nullable=True),          # JSON
    sa.Column("new_flavor", sa.Text, nullable=True),          # JSON
    *columns.timestamps(),
)

# What was done to a server and how each step went (Nova's instance actions, in the
# server's cell as Nova keeps them). One action per API request that changes a server;
# ``request_id`` is the API's x-openstack-request-id. ``message`` is the one-line reason
# of the last step that failed (Nova writes "Error" there; its meaning, "the related
# error message", is kept).
instance_actions = sa.Table(
    "instance_actions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("action", sa.String(255), nullable=False),
    sa.Column("instance_uuid", columns.name(36), nullable=False, index=True),
    sa.Column("request_id", columns.name(255), nullable=False),
    sa.Column("user_id", columns.name(255), nullable=True),
    sa.Column("project_id", columns.name(255), nullable=True),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("message", sa.Text, nullable=True),
    *columns.timestamps(),
    sa.Index("ix_instance_actions_instance_uuid_request_id", "instance_uuid", "request_id"),
)

# A step of an action, written by whoever does it (API, conductor, compute). ``result`` is
# Success or Error; ``details`` the reason of an Error in one line (Stratus stores no
# tracebacks: the API's admin-only ``traceback`` shows this line too).
instance_actions_events = sa.Table(
    "instance_actions_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("action_id", sa.Integer,
              sa.ForeignKey("instance_actions.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("event", sa.String(255), nullable=False),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("result", sa.String(32), nullable=True),
    sa.Column("host", columns.name(255), nullable=True),
    sa.Column("details", sa.Text, nullable=True),
    *columns.timestamps(),
)
