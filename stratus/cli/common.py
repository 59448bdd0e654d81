"""What every Stratus command shares: config flags, one-line errors, logging, the database.

Every failure an operator can cause (a bad flag, a bad option value, an
unreachable database, a busy port) ends the command with one line on stderr,
``error: ...`` or ``PROG: error: ...`` for a bad flag, and a non-zero exit:
1 for a failure at run time, 2 for a usage or configuration mistake.
"""

from __future__ import annotations

import argparse
import contextlib
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


def chosen_parser(parser: argparse.ArgumentParser,
                  args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)parser the command line reached (``stratus-manage placement``
    reaches ``placement``), for help about what can follow it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], args)
    return parser


def short_help(parser: argparse.ArgumentParser, width: int = 100) -> str:
    """What a bare command prints: its commands, one line each, and where to read more
    (--help also lists every configuration option: pages, not a summary)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    names = [a.dest for a in sub._choices_actions]
    column = max(len(n) for n in names) + 4
    lines = [parser.format_usage().rstrip(), "", str(parser.description or ""), "",
             f"{sub.metavar or 'COMMAND'}s:".lower()]
    for action in sub._choices_actions:
        text = one_line(action.help or "")
        room = width - column - 2
        if len(text) > room:
            text = text[:room - 3].rstrip(" ,;(") + "..."
        lines.append(f"  {action.dest.ljust(column)}{text}")
    everything = "everything, with every configuration option" if parser.epilog else \
        "the full help"
    lines += ["", f"More: {parser.prog} {sub.metavar or 'COMMAND'} --help (one command), "
              f"{parser.prog} --help ({everything})."]
    return "\n".join(lines)


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


def add_leading_config_args(parser: argparse.ArgumentParser) -> None:
    """``--data-dir`` and ``--config-file`` before the command too (``stratus-manage
    --data-dir D cell_v2 list_cells``). Their own names: a subcommand's defaults would
    overwrite shared ones; :func:`merge_leading_config_args` hands them on."""
    parser.add_argument("--data-dir", dest="leading_data_dir", metavar="DIR",
                        help="the data directory, for every command (as after it)")
    parser.add_argument("--config-file", dest="leading_config_files", action="append",
                        default=[], metavar="PATH",
                        help="configuration file, for every command (as after it)")


def merge_leading_config_args(args: argparse.Namespace) -> None:
    """The options given before the command, where the command's own do not say."""
    leading = getattr(args, "leading_data_dir", None)
    if leading and getattr(args, "data_dir", None) is None:
        args.data_dir = leading
    files = getattr(args, "leading_config_files", None) or []
    if files:
        args.config_file = [*files, *(getattr(args, "config_file", None) or [])]


def add_traceback_flag(parser: argparse.ArgumentParser) -> None:
    """``PROG --debug COMMAND``: a failure shows its traceback (as STRATUS_DEBUG=1 does).
    Its own name: a command's --debug (log level) would overwrite a shared one."""
    parser.add_argument("--debug", dest="show_traceback", action="store_true",
                        help="show the traceback of an unexpected failure "
                        "(also $STRATUS_DEBUG=1)")


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


def positive_seconds(text: str) -> float:
    """argparse type for a time limit: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: not a number of "
                                         "seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid value {text}: must be a number of "
                                         "seconds above 0")
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
        engine = db.create_engine(url, create=sync)
        db.wait_for(engine, seconds=wait_seconds)
    except db.NoSuchDirectory as exc:
        fail(f"cannot use the {what} database URL {shown}: {exc}", USAGE_ERROR)
    except db.NoSuchDatabase as exc:
        fail(f"no {what} database at {exc.path}: run once with --sync-db to create it",
             USAGE_ERROR)
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


def connect(url: str, seconds: float, what: str = "placement", *, create: bool = False,
            sync_command: str = "stratus-manage placement db sync",
            missing: str | None = None) -> Any:
    """An engine for ``url`` that has answered a query, or a one-line failure.

    Waits up to ``seconds`` for a server that is still starting (connection
    refused), so that services started together come up in any order. A SQLite
    file that is not there is created only with ``create`` (commands that make
    or migrate the database); otherwise the command ends saying where it looked
    and what to do (``missing``, by default: where to run it, or ``sync_command``).
    """
    from stratus.storage import engine as db

    shown = redact(url)
    try:
        engine = db.create_engine(url, create=create)
    except ModuleNotFoundError as exc:
        hint = {"psycopg": "stratus[postgres]", "pymysql": "stratus[mysql]",
                "MySQLdb": "stratus[mysqlclient]"}.get(
            str(exc.name), str(exc.name))
        fail(f"the database URL {shown} needs the {exc.name} driver: pip install '{hint}'")
    except db.NoSuchDirectory as exc:
        fail(f"cannot use the database URL {shown}: {exc}", USAGE_ERROR)
    except db.NoSuchDatabase as exc:
        fail(f"no {what} database at {exc.path}: {missing}" if missing
             else missing_database(what, exc.path, sync_command))
    except Exception as exc:
        fail(f"cannot use the database URL {shown}: {db_error(exc)}", USAGE_ERROR)
    try:
        db.wait_for(engine, seconds=seconds)
    except Exception as exc:
        engine.dispose()
        fail(f"cannot connect to the {what} database at {shown}: {db_error(exc)}")
    return engine


def make_data_dir(url: str, data_dir: str) -> None:
    """Before a command creates a SQLite database in the data directory: make that
    directory, which is Stratus's own (serve makes it too). A directory named anywhere
    else in a URL is the operator's: if missing, create_engine refuses it."""
    import os

    import sqlalchemy as sa

    try:
        u = sa.engine.make_url(url)
    except Exception:
        return   # connect() says what is wrong with the URL
    if u.get_backend_name() != "sqlite" or u.database in (None, "", ":memory:"):
        return
    home = os.path.abspath(data_dir)
    if os.path.dirname(os.path.abspath(str(u.database))) == home:
        with contextlib.suppress(OSError):   # if it fails, create_engine names the directory
            os.makedirs(home, exist_ok=True)


def missing_database(what: str, path: str, sync_command: str) -> str:
    """Where a command looked for a SQLite database that is not there, and what to do."""
    return (f"no {what} database at {path}: run this in the directory holding stratus "
            f"serve's data/, or give --data-dir DIR (to make a new one, run: "
            f"{sync_command})")


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


def run(main: Callable[[], int | None], args: argparse.Namespace | None = None) -> NoReturn:
    """Run a command; turn every failure into one line and a non-zero exit.

    Known failures get their own words (see :func:`explain`); anything else is
    one line naming the exception. The traceback is shown only with --debug or
    STRATUS_DEBUG=1. A reader that went away (``stratus host usage | head -3``)
    ends the command quietly, as it would a C program killed by SIGPIPE.
    """
    try:
        code = main() or 0
        sys.stdout.flush()   # a closed pipe must be found here, not at interpreter exit
    except SystemExit:
        _flush_quietly()
        raise
    except configuration.ConfigError as exc:
        fail(str(exc), USAGE_ERROR)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = _reader_gone()
    except Exception as exc:
        if wants_traceback(args):
            raise
        hint = "" if _known(exc) else " (--debug or STRATUS_DEBUG=1 shows the traceback)"
        fail(explain(exc) + hint)
    raise SystemExit(code)


BROKEN_PIPE_EXIT = 128 + 13   # what a shell reports for a process killed by SIGPIPE


def _flush_quietly() -> None:
    """Flush what a failing command printed; a reader that went away is no news."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()
    except (OSError, ValueError):
        pass


def _reader_gone() -> int:
    """stdout's reader closed the pipe: point stdout at /dev/null so that Python's
    final flush finds nowhere to fail, and exit as SIGPIPE would have."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE_EXIT


def wants_traceback(args: argparse.Namespace | None) -> bool:
    import os

    flag = bool(args is not None and (getattr(args, "debug", None)
                                      or getattr(args, "show_traceback", None)))
    return flag or os.environ.get("STRATUS_DEBUG", "").lower() in ("1", "true", "yes")


def _known(exc: BaseException) -> bool:
    import httpx
    import sqlalchemy as sa

    from stratus.storage import engine as db

    return isinstance(exc, (db.NoSuchDatabase, sa.exc.DBAPIError, OSError,
                            httpx.TransportError))


def explain(exc: BaseException) -> str:
    """One line for an exception no command caught itself."""
    import sqlalchemy as sa

    from stratus.storage import engine as db

    if isinstance(exc, db.NoSuchDatabase):
        return str(exc)
    if isinstance(exc, sa.exc.DBAPIError):
        text = db_error(exc)
        if _missing_table(text):
            return (f"the database has no Stratus schema ({text}): run this in the "
                    "directory holding stratus serve's data/ (or give --data-dir DIR), or "
                    "migrate the database first (stratus-manage placement db sync, "
                    "stratus-manage api_db sync)")
        return f"database error: {text}"
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    import httpx

    if isinstance(exc, httpx.TransportError):
        # A service a command talks to stopped answering (connection refused, timeout).
        return f"cannot reach a service: {type(exc).__name__}: {one_line(str(exc))}"
    return f"unexpected {type(exc).__name__}: {one_line(str(exc))}"


def _missing_table(text: str) -> bool:
    lowered = text.lower()
    return ("no such table" in lowered                              # SQLite
            or ("relation" in lowered and "does not exist" in lowered)   # PostgreSQL
            or ("table" in lowered and "doesn't exist" in lowered))      # MariaDB
