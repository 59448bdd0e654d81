"""``stratus-manage``: database and operator maintenance commands.

``stratus-manage placement db sync`` and ``db version`` work as
``placement-manage db sync`` / ``db version`` do, on SQLite, PostgreSQL and
MariaDB, reading the same placement.conf. ``db check-usage`` checks (and with
``--fix`` repairs) the running usage totals against the allocations.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from stratus import config as configuration
from stratus.cli import cell_v2, common

DB_WAIT_SECONDS = 5.0


def build_parser() -> argparse.ArgumentParser:
    parser = common.ArgumentParser(
        prog="stratus-manage",
        description="Stratus maintenance: database migrations and operator repairs.",
        epilog=configuration.describe_options(),
        formatter_class=common.HelpFormatter,
    )
    top = parser.add_subparsers(dest="area", metavar="AREA")
    placement = common.add_parser(top, "placement", help="Placement database commands",
                                  description="Placement database commands.", options=False)
    psub = placement.add_subparsers(dest="group", metavar="GROUP")
    dbp = common.add_parser(psub, "db", help="schema migrations",
                            description="Placement schema migrations.", options=False)
    dsub = dbp.add_subparsers(dest="action", metavar="ACTION")
    for name, func, text in (
        ("sync", cmd_db_sync, "migrate the placement database to the current schema and "
         "seed the standard resource classes and traits (safe to repeat)"),
        ("version", cmd_db_version, "print the database's schema revision, or 'empty'"),
    ):
        p = common.add_parser(dsub, name, help=text, description=text[0].upper() + text[1:]
                              + ". The database is [placement_database] connection, or --db.")
        common.add_config_args(p)
        p.add_argument("--db", metavar="URL", help="database URL (overrides configuration)")
        p.set_defaults(func=func)
    books = common.add_parser(
        dsub, "check-usage", help="check the running usage totals against the allocations",
        description="Check that each inventory's running usage total (what claims are checked "
        "against) is what its allocations add up to, and that no allocation is against a "
        "missing inventory. Exit status 0 if the books balance (or --fix balanced them), 1 if "
        "not. The database is [placement_database] connection, or --db.")
    common.add_config_args(books)
    books.add_argument("--db", metavar="URL", help="database URL (overrides configuration)")
    books.add_argument("--fix", action="store_true",
                       help="set each differing total to what its allocations add up to "
                            "(safe while Placement serves: it locks the inventories it reads)")
    books.add_argument("--json", action="store_true", help="print the findings as JSON")
    books.set_defaults(func=cmd_db_check_usage)
    cell_v2.add_commands(top)
    return parser


def _db_url(args: argparse.Namespace) -> str:
    config = common.load_config(args, {("placement_database", "connection"): args.db})
    return str(config.placement_db_url)


def _engine(args: argparse.Namespace, url: str | None = None) -> Any:
    return common.connect(url or _db_url(args), DB_WAIT_SECONDS)


def cmd_db_sync(args: argparse.Namespace) -> int:
    engine = _engine(args)
    try:
        common.sync_database(engine)
        print(f"placement database at revision {_revision(engine)}")
    finally:
        engine.dispose()
    return 0


def cmd_db_version(args: argparse.Namespace) -> int:
    import os

    import sqlalchemy as sa

    db_url = _db_url(args)
    url = sa.engine.make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            and not os.path.exists(url.database):
        # Asking must not create an empty database file as a side effect.
        print(f"empty: no database file at {url.database} "
              "(run: stratus-manage placement db sync)")
        return 0
    engine = _engine(args, db_url)
    try:
        print(_revision(engine) or "empty (run: stratus-manage placement db sync)")
    finally:
        engine.dispose()
    return 0


def cmd_db_check_usage(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from stratus.placement.store import books
    from stratus.storage import engine as db

    engine = _engine(args)
    try:
        if args.fix:
            with db.write(engine) as conn:
                fixed, orphans = books.repair(conn)
            wrong = []
        else:
            with db.read(engine) as conn:
                wrong, orphans = books.drift(conn)
            fixed = []
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps({"fixed": [dataclasses.asdict(d) for d in fixed],
                          "differing": [dataclasses.asdict(d) for d in wrong],
                          "without_inventory": [dataclasses.asdict(d) for d in orphans]},
                         indent=2))
    else:
        for d in fixed:
            print(f"fixed: provider {d.provider_uuid} {d.resource_class}: total was {d.kept}, "
                  f"its allocations add up to {d.allocated}")
        for d in wrong:
            print(f"differs: provider {d.provider_uuid} {d.resource_class}: total {d.kept}, "
                  f"its allocations add up to {d.allocated} (--fix sets it)")
        for d in orphans:
            print(f"no inventory: provider {d.provider_uuid} {d.resource_class} has "
                  f"{d.allocated} allocated and no inventory of it")
        if not (fixed or wrong or orphans):
            print("the usage totals match the allocations")
    return 1 if wrong or orphans else 0


def _revision(engine: Any) -> str | None:
    from stratus.placement import db as placement_db

    try:
        return placement_db.current_revision(engine)
    except Exception as exc:
        common.fail(f"cannot read the schema revision: {common.db_error(exc)}")


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        raise SystemExit(2)
    common.run(lambda: args.func(args))


if __name__ == "__main__":
    main()
