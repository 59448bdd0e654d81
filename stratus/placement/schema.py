"""The Placement database schema: every table in one place.

SQLAlchemy Core only. The Alembic migrations under ``migrations/versions``
create exactly these tables; a test compares the two so they cannot drift.

Two tables exist only so the in-memory candidates index can follow writes
without rebuilding: ``change_counter`` (one row, bumped by every write
transaction, which also serialises commits in counter order) and
``provider_changes`` (which providers a given counter value touched; the
recent part of it: see ``store.common.record_change``).
"""

from __future__ import annotations

import sqlalchemy as sa

from stratus.storage import columns

metadata = columns.new_metadata()


resource_classes = sa.Table(
    "resource_classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

traits = sa.Table(
    "traits",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

resource_providers = sa.Table(
    "resource_providers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("name", columns.name(200), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), index=True),
    sa.Column(
        "parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), index=True
    ),
    *columns.timestamps(),
)

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "resource_provider_id",
        sa.Integer,
        sa.ForeignKey("resource_providers.id"),
        nullable=False,
    ),
    sa.Column(
        "resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"), nullable=False
    ),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    # Double precision everywhere: capacity = int((total - reserved) * ratio) must come
    # out the same on every backend (a MySQL FLOAT would turn 1.1 into 1.10000002).
    sa.Column("allocation_ratio", sa.Double, nullable=False),
    # The sum of the allocations against this inventory, kept by every allocation
    # write in its own transaction (store.allocations.shift_usage), so a claim
    # reads one row per class instead of summing every allocation of the provider.
    sa.Column("used", sa.BigInteger, nullable=False, server_default="0"),
    *columns.timestamps(),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id"),
    sa.Index("ix_inventories_resource_class_id", "resource_class_id"),
)

resource_provider_traits = sa.Table(
    "resource_provider_traits",
    metadata,
    sa.Column(
        "resource_provider_id",
        sa.Integer,
        sa.ForeignKey("resource_providers.id"),
        primary_key=True,
    ),
    sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"), primary_key=True, index=True),
    *columns.timestamps(),
)

placement_aggregates = sa.Table(
    "placement_aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
)

resource_provider_aggregates = sa.Table(
    "resource_provider_aggregates",
    metadata,
    sa.Column(
        "resource_provider_id",
        sa.Integer,
        sa.ForeignKey("resource_providers.id"),
        primary_key=True,
    ),
    sa.Column(
        "aggregate_id",
        sa.Integer,
        sa.ForeignKey("placement_aggregates.id"),
        primary_key=True,
        index=True,
    ),
    *columns.timestamps(),
)

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("external_id", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("external_id", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

consumer_types = sa.Table(
    "consumer_types",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", columns.name(255), nullable=False, unique=True),
    *columns.timestamps(),
)

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", columns.name(36), nullable=False, unique=True),
    sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
    sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    sa.Column("consumer_type_id", sa.Integer, sa.ForeignKey("consumer_types.id"), nullable=True),
    *columns.timestamps(),
    sa.Index("ix_consumers_project_id_user_id", "project_id", "user_id"),
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "resource_provider_id",
        sa.Integer,
        sa.ForeignKey("resource_providers.id"),
        nullable=False,
    ),
    sa.Column("consumer_id", sa.Integer, sa.ForeignKey("consumers.id"), nullable=False),
    sa.Column(
        "resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"), nullable=False
    ),
    sa.Column("used", sa.Integer, nullable=False),
    *columns.timestamps(),
    sa.Index("ix_allocations_resource_provider_class_used", "resource_provider_id",
             "resource_class_id", "used"),
    sa.Index("ix_allocations_consumer_id", "consumer_id"),
)

change_counter = sa.Table(
    "change_counter",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("value", sa.BigInteger, nullable=False),
    # provider_changes holds every change after this value (older ones are pruned);
    # a reader that last saw an older value reloads instead of reading the log.
    sa.Column("pruned_through", sa.BigInteger, nullable=False, server_default="0"),
)

provider_changes = sa.Table(
    "provider_changes",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column("seq", sa.BigInteger, nullable=False, index=True),
    # NULL means "something global changed" (e.g. a trait or class was
    # deleted): readers of the log reload everything they derive from it.
    sa.Column("resource_provider_id", sa.Integer, nullable=True),
)
