"""Alembic environment for the Placement database.

Run through ``stratus-manage placement db sync`` (or on API start), which
passes the live connection in ``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from stratus.placement.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
