"""Column types and conventions every Stratus schema module shares."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# Deterministic constraint and index names, so migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def new_metadata() -> sa.MetaData:
    return sa.MetaData(naming_convention=NAMING_CONVENTION)


def name(length: int) -> sa.String:
    """A case-sensitive string: names and uuids are case-sensitive in Placement and Nova,
    but MySQL/MariaDB compare VARCHARs case-insensitively under the default collation,
    so a binary collation is forced there."""
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"), "mysql"
    )


def timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]
