"""``stratus-manage``: database and operator maintenance commands."""

from __future__ import annotations

import argparse
import sys

from stratus import config as configuration
from stratus.cli import common
from stratus.placement import db as placement_db
from stratus.storage import engine as db


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stratus-manage",
        description="Stratus maintenance: database migrations and operator repairs.",
        epilog=configuration.describe_options(),
        formatter_class=common.HelpFormatter,
    )
    top = parser.add_subparsers(dest="area", metavar="AREA")
    placement = top.add_parser("placement", help="Placement database commands")
    psub = placement.add_subparsers(dest="group", metavar="GROUP")
    dbp = psub.add_parser("db", help="schema migrations")
    dsub = dbp.add_subparsers(dest="action", metavar="ACTION")
    for name, func, text in (
        ("sync", cmd_db_sync, "migrate the placement database to the current schema"),
        ("version", cmd_db_version, "print the database's schema revision"),
    ):
        p = dsub.add_parser(name, help=text, description=text)
        common.add_config_args(p)
        p.add_argument("--db", metavar="URL", help="database URL (overrides configuration)")
        p.set_defaults(func=func)
    return parser


def _engine(args: argparse.Namespace) -> db.Engine:
    config = common.load_config(args, {("placement_database", "connection"): args.db})
    engine = db.create_engine(config.placement_db_url)
    try:
        db.wait_for(engine, seconds=5)
    except Exception as exc:  # noqa: BLE001
        common.fail(f"cannot connect to the placement database: {exc}")
    return engine


def cmd_db_sync(args: argparse.Namespace) -> int:
    engine = _engine(args)
    placement_db.sync(engine)
    print(f"placement database at revision {placement_db.current_revision(engine)}")
    return 0


def cmd_db_version(args: argparse.Namespace) -> int:
    engine = _engine(args)
    print(placement_db.current_revision(engine) or "empty (run: stratus-manage placement db sync)")
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        raise SystemExit(2)
    common.run(lambda: args.func(args))


if __name__ == "__main__":
    main()
