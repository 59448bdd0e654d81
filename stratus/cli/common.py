"""What every Stratus command shares: config flags, one-line errors, logging, the database.

Every failure an operator can cause (a bad flag, a bad option value, an
unreachable database, a busy port) ends the command with one line on stderr,
``error: ...`` or ``PROG: error: ...`` for a bad flag, and a non-zero exit:
1 for a failure at run time, 2 for a usage or configuration mistake.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from stratus import config as configuration

USAGE_ERROR = 2
RUNTIME_ERROR = 1


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad flag gives one line (with a pointer to --help), not the usage."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    pass


def add_parser(sub: Any, name: str, help: str, description: str,
               options: bool = True) -> ArgumentParser:
    """A subcommand whose --help ends with every configuration option when ``options``."""
    parser: ArgumentParser = sub.add_parser(
        name, help=help, description=description,
        epilog=configuration.describe_options() if options else None,
        formatter_class=HelpFormatter,
    )
    return parser


def add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-file", action="append", default=[], metavar="PATH",
        help="INI configuration file (placement.conf syntax); may be repeated, later "
             "files win. Environment variables OS_<SECTION>__<OPTION> override files; "
             "flags override both.",
    )
    parser.add_argument("--data-dir", metavar="DIR",
                        help="directory for SQLite files (default ./data or $STRATUS_DATA_DIR)")
    parser.add_argument("--debug", action="store_true", default=None,
                        help="log at debug level ([DEFAULT] debug)")


def port_number(text: str) -> int:
    """argparse type for a TCP port."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: not a number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: must be 1-65535")
    return port


def non_negative_int(text: str) -> int:
    """argparse type for an amount that may be 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid value {value}: must be at least 0")
    return value


def positive_int(text: str) -> int:
    """argparse type for a count that must be at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid value {value}: must be at least 1")
    return value


def load_config(
    args: argparse.Namespace, extra: dict[tuple[str, str], Any] | None = None
) -> configuration.Config:
    return configuration.load(args.config_file, overrides=cli_overrides(args, extra))


def cli_overrides(
    args: argparse.Namespace, extra: dict[tuple[str, str], Any] | None = None
) -> dict[tuple[str, str], Any]:
    """Options given as flags; None means 'not given' and leaves file and environment alone."""
    overrides: dict[tuple[str, str], Any] = {
        ("DEFAULT", "data_dir"): getattr(args, "data_dir", None),
        ("DEFAULT", "debug"): getattr(args, "debug", None),
    }
    overrides.update(extra or {})
    return overrides


def fail(message: str, code: int = RUNTIME_ERROR) -> NoReturn:
    print(f"error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(code)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def setup_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not debug:
        # Alembic narrates every migration step at INFO; the command says what it did.
        logging.getLogger("alembic").setLevel(logging.WARNING)


# ---- the database ----------------------------------------------------------------


def redact(url: str) -> str:
    import sqlalchemy as sa

    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL: show nothing that could hold a password
        return "<unparsable URL>"


def migrated_engine(url: str, what: str, package: Any, sync: bool,
                    wait_seconds: float = 10.0) -> Any:
    """An engine on ``url`` whose schema is at head: migrated first with ``sync``, else
    refused in one line. ``package`` holds the ``migrations`` directory; ``what`` names
    the database in messages ("cell", "API")."""
    import os

    from stratus.storage import engine as db
    from stratus.storage import migrate

    shown = redact(url)
    try:
        engine = db.create_engine(url)
        db.wait_for(engine, seconds=wait_seconds)
    except Exception as exc:
        fail(f"cannot connect to the {what} database at {shown}: {db_error(exc)}")
    location = os.path.join(os.path.dirname(package.__file__), "migrations")
    if sync:
        migrate.upgrade(engine, location)
    elif migrate.current(engine) != migrate.head(location):
        fail(f"the {what} database at {shown} is not at the current schema (revision "
             f"{migrate.current(engine) or 'none'}); run once with --sync-db", USAGE_ERROR)
    return engine


def db_error(exc: BaseException) -> str:
    """A driver error as one readable line: the driver's own words, without SQL or links."""
    import sqlalchemy as sa

    if isinstance(exc, sa.exc.DBAPIError) and exc.orig is not None:
        exc = exc.orig
    text = one_line(str(exc)) or type(exc).__name__
    return text.split(" (Background on this error at:")[0]


def connect(url: str, seconds: float, what: str = "placement") -> Any:
    """An engine for ``url`` that has answered a query, or a one-line failure.

    Waits up to ``seconds`` for a server that is still starting (connection
    refused), so that services started together come up in any order.
    """
    from stratus.storage import engine as db

    shown = redact(url)
    try:
        engine = db.create_engine(url)
    except ModuleNotFoundError as exc:
        hint = {"psycopg": "stratus[postgres]", "pymysql": "stratus[mysql]",
                "MySQLdb": "stratus[mysqlclient]"}.get(
            str(exc.name), str(exc.name))
        fail(f"the database URL {shown} needs the {exc.name} driver: pip install '{hint}'")
    except Exception as exc:
        fail(f"cannot use the database URL {shown}: {db_error(exc)}", USAGE_ERROR)
    try:
        db.wait_for(engine, seconds=seconds)
    except Exception as exc:
        engine.dispose()
        fail(f"cannot connect to the {what} database at {shown}: {db_error(exc)}")
    return engine


def sync_database(engine: Any) -> None:
    from stratus.placement import db as placement_db

    try:
        placement_db.sync(engine)
    except Exception as exc:
        fail(f"cannot migrate the placement database: {db_error(exc)}")


# ---- running ---------------------------------------------------------------------


def check_can_listen(host: str, port: int) -> None:
    """Fail now, in one line, if the server could not bind ``host:port``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror}", USAGE_ERROR)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            fail(f"cannot listen on {host}:{port}: {exc.strerror}")


def run(main: Callable[[], int | None]) -> NoReturn:
    """Run a command; turn expected failures into one line and a non-zero exit."""
    try:
        code = main() or 0
    except configuration.ConfigError as exc:
        fail(str(exc), USAGE_ERROR)
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code)
