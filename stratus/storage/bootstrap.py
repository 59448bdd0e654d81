"""Creating a deployment's databases and its database user on PostgreSQL or MariaDB.

``stratus-manage db bootstrap`` runs this with the server's administrator
account: one user for every Stratus service, and the databases a deployment of
N cells needs (placement, api, network, cell0, cell1..N), each owned by
(PostgreSQL) or fully granted to (MariaDB) that user. Every step checks first,
so running it again changes nothing but the user's password, which is set from
the password given each time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")


class BootstrapError(ValueError):
    """Something given cannot be used (a name, the server's kind)."""


@dataclass(frozen=True)
class Plan:
    user: str
    password: str
    databases: tuple[str, ...]
    user_host: str = "%"   # MariaDB: where the user may connect from


@dataclass(frozen=True)
class Outcome:
    user_created: bool
    created: tuple[str, ...]
    existing: tuple[str, ...]


def database_names(prefix: str, cells: int) -> dict[str, str]:
    """role -> database name: placement, api, network, cell0, cell1..N."""
    roles = ["placement", "api", "network", "cell0", *(f"cell{i}" for i in range(1, cells + 1))]
    return {role: f"{prefix}_{role}" for role in roles}


def check_identifier(what: str, name: str) -> str:
    if not IDENTIFIER.match(name):
        raise BootstrapError(f"{what} {name!r} must be letters, digits and '_' (at most 48, "
                             "not starting with a digit)")
    return name


def _literal(conn: Connection, text: str) -> str:
    """A SQL string literal for DDL, which takes no bound parameters."""
    if "\x00" in text:
        raise BootstrapError("the password contains a NUL character")
    quoted = text.replace("'", "''")
    if conn.dialect.name == "mysql":
        quoted = quoted.replace("\\", "\\\\")
    return f"'{quoted}'"


def apply(conn: Connection, plan: Plan) -> Outcome:
    """Create what is missing; ``conn`` is an administrator's, in autocommit mode."""
    check_identifier("user", plan.user)
    for name in plan.databases:
        check_identifier("database", name)
    backend = conn.dialect.name
    if backend == "postgresql":
        return _postgresql(conn, plan)
    if backend == "mysql":
        return _mysql(conn, plan)
    raise BootstrapError(f"{backend} has no users or databases to create: SQLite files are "
                         "made by `stratus-manage ... sync` where they are configured")


def _postgresql(conn: Connection, plan: Plan) -> Outcome:
    password = _literal(conn, plan.password)
    exists = conn.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :u"),
                          {"u": plan.user}).first() is not None
    verb = "ALTER" if exists else "CREATE"
    conn.exec_driver_sql(f'{verb} ROLE "{plan.user}" LOGIN PASSWORD {password}')
    have = set(conn.execute(sa.text("SELECT datname FROM pg_database")).scalars())
    created = []
    for name in plan.databases:
        if name not in have:
            # The owner may create tables in the database's public schema (PostgreSQL 15
            # gives that schema to the database owner), which the migrations need.
            conn.exec_driver_sql(f'CREATE DATABASE "{name}" OWNER "{plan.user}" '
                                 "ENCODING 'UTF8' TEMPLATE template0")
            created.append(name)
        else:
            conn.exec_driver_sql(f'ALTER DATABASE "{name}" OWNER TO "{plan.user}"')
    return Outcome(not exists, tuple(created),
                   tuple(n for n in plan.databases if n not in created))


def _ddl(conn: Connection, statement: str) -> None:
    """Run DDL built with literals; the MySQL drivers format '%' even with no
    parameters, so it is doubled there (the host '%', a password's '%')."""
    conn.exec_driver_sql(statement.replace("%", "%%"))


def _mysql(conn: Connection, plan: Plan) -> Outcome:
    password = _literal(conn, plan.password)
    account = f"'{plan.user}'@{_literal(conn, plan.user_host)}"
    exists = conn.execute(sa.text("SELECT 1 FROM mysql.user WHERE User = :u AND Host = :h"),
                          {"u": plan.user, "h": plan.user_host}).first() is not None
    if exists:
        _ddl(conn, f"ALTER USER {account} IDENTIFIED BY {password}")
    else:
        _ddl(conn, f"CREATE USER {account} IDENTIFIED BY {password}")
    have = set(conn.execute(sa.text("SELECT schema_name FROM information_schema.schemata"))
               .scalars())
    created = []
    for name in plan.databases:
        if name not in have:
            _ddl(conn, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
            created.append(name)
        _ddl(conn, f"GRANT ALL PRIVILEGES ON `{name}`.* TO {account}")
    return Outcome(not exists, tuple(created),
                   tuple(n for n in plan.databases if n not in created))


def user_url(admin_url: str, plan: Plan, database: str) -> sa.engine.URL:
    """The URL services use for ``database``: the admin URL's server, the plan's user."""
    url = sa.engine.make_url(admin_url)
    return url.set(username=plan.user, password=plan.password, database=database)
