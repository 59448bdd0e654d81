"""Run Alembic migrations for one of Stratus's databases (placement, api, cell)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from stratus.storage import engine as db


def _config(location: str, conn: Connection) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", location)
    cfg.attributes["connection"] = conn
    return cfg


def upgrade(engine: Engine, location: str, revision: str = "head") -> None:
    with db.write(engine) as conn:
        command.upgrade(_config(location, conn), revision)


def current(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head(location: str) -> str | None:
    return ScriptDirectory(location).get_current_head()
