"""``stratus-manage cell_v2 ...`` and ``stratus-manage api_db ...``: cells, as nova-manage has them.

Commands (flags spelled as nova-manage spells them)::

    cell_v2 map_cell0      [--database_connection URL]
    cell_v2 create_cell    --name NAME [--transport-url URL] [--database_connection URL]
                           [--disabled]
    cell_v2 update_cell    --cell_uuid UUID [--name N] [--transport-url URL]
                           [--database_connection URL] [--disable | --enable]
    cell_v2 delete_cell    --cell_uuid UUID [--force]
    cell_v2 list_cells     [--verbose]
    cell_v2 discover_hosts [--cell_uuid UUID] [--verbose]
    cell_v2 list_hosts     [--cell_uuid UUID]
    api_db sync | version
    db sync [--cell_uuid UUID]   (every mapped cell's database, cell0 included)

Exit codes (the same for every command)::

    0  done (also: map_cell0 when cell0 already exists)
    1  not found (unknown cell), or a failure at run time (database unreachable,
       a cell database discover_hosts could not read, a host mapped to another cell)
    2  usage: a bad or missing flag, contradictory flags, an unusable URL
    3  refused by the current state: enabling an enabled cell, disabling a disabled
       one or cell0, a name or URL pair already taken, deleting a cell that still
       has hosts or servers without --force

Every error is one line on stderr. Commands that change the cell list
(create_cell, update_cell, delete_cell) send SIGHUP to every scheduler
registered in the run directory (``run/`` in the data directory, or
``--run-dir``), ``stratus serve`` included, and say how many they reached;
schedulers elsewhere reload within ``[scheduler] cell_cache_refresh_interval``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from stratus import config as configuration
from stratus.cli import bootstrap_cmd, common

NOT_FOUND = 1
REFUSED = 3
DB_WAIT_SECONDS = 5.0
CELL0_TRANSPORT_URL = "none:///"
MASK = "****"


def add_commands(top: Any) -> None:
    """Register ``cell_v2`` and ``api_db`` under ``stratus-manage``."""
    cells = common.add_parser(top, "cell_v2", help="cell mappings and host discovery",
                              description=_doc_block(), options=False)
    sub = cells.add_subparsers(dest="action", metavar="ACTION")

    p = _command(sub, "map_cell0", "create the mapping of cell0, where servers that never got "
                 "a host are kept (safe to repeat)")
    p.add_argument("--database_connection", metavar="URL",
                   help="cell0's database (default: [database] connection, e.g. "
                   "$OS_DATABASE__CONNECTION; else cell0.db beside a SQLite API database, "
                   "else the API database's name + '_cell0')")
    p.set_defaults(func=cmd_map_cell0)

    p = _command(sub, "create_cell", "create a cell mapping")
    p.add_argument("--name", help="the cell's name (unique)")
    p.add_argument("--transport-url", dest="transport_url", metavar="URL",
                   help="the cell's message bus (default: [DEFAULT] transport_url, e.g. "
                   "$OS_DEFAULT__TRANSPORT_URL)")
    p.add_argument("--database_connection", metavar="URL",
                   help="the cell's database URL (default: [database] connection, e.g. "
                   "$OS_DATABASE__CONNECTION: keeps its password off the command line)")
    p.add_argument("--disabled", action="store_true",
                   help="create it disabled: no new servers are scheduled to it")
    p.add_argument("--verbose", action="store_true",
                   help="print the new cell's uuid alone on the first line (for scripts), then "
                   "its name, transport URL and database connection (passwords masked) and "
                   "whether it is enabled")
    p.set_defaults(func=cmd_create_cell)

    p = _command(sub, "update_cell", "change a cell's name, URLs, or enabled state")
    p.add_argument("--cell_uuid", required=True, metavar="UUID", help="the cell (uuid or name)")
    p.add_argument("--name", help="new name")
    p.add_argument("--transport-url", dest="transport_url", metavar="URL",
                   help="new message bus URL")
    p.add_argument("--database_connection", metavar="URL", help="new database URL")
    state = p.add_mutually_exclusive_group()
    state.add_argument("--disable", action="store_true",
                       help="stop scheduling new servers to the cell (its servers keep "
                       "working; moves that name it as destination are not blocked)")
    state.add_argument("--enable", action="store_true", help="schedule to the cell again")
    p.set_defaults(func=cmd_update_cell)

    p = _command(sub, "delete_cell", "delete a cell mapping")
    p.add_argument("--cell_uuid", required=True, metavar="UUID", help="the cell (uuid or name)")
    p.add_argument("--force", action="store_true",
                   help="also delete its host mappings and detach its server mappings")
    p.set_defaults(func=cmd_delete_cell)

    p = _command(sub, "list_cells", "list cell mappings (passwords masked)")
    p.add_argument("--verbose", action="store_true", help="show passwords in URLs")
    p.set_defaults(func=cmd_list_cells)

    p = _command(sub, "discover_hosts", "map the compute hosts found in each cell's database "
                 "that no cell maps yet")
    p.add_argument("--cell_uuid", metavar="UUID", help="only this cell (uuid or name)")
    p.add_argument("--verbose", action="store_true", help="say what was found in each cell")
    p.set_defaults(func=cmd_discover_hosts)

    p = _command(sub, "list_hosts", "list host mappings")
    p.add_argument("--cell_uuid", metavar="UUID", help="only this cell (uuid or name)")
    p.set_defaults(func=cmd_list_hosts)

    api = common.add_parser(top, "api_db", help="API database schema",
                            description="API database (cell mappings, flavors, aggregates, "
                            "request specs) schema migrations.", options=False)
    asub = api.add_subparsers(dest="action", metavar="ACTION")
    p = _command(asub, "sync", "migrate the API database to the current schema (safe to "
                 "repeat)", run_dir=False)
    p.set_defaults(func=cmd_api_db_sync)
    p = _command(asub, "version", "print the API database's schema revision, or 'empty'",
                 run_dir=False)
    p.set_defaults(func=cmd_api_db_version)

    cdb = common.add_parser(top, "db", help="cell database schemas; creating a deployment's "
                            "databases", description="Cell database schema migrations, for "
                            "every cell the API database maps (cell0 included), and creating "
                            "a deployment's databases and user (bootstrap).", options=False)
    csub = cdb.add_subparsers(dest="action", metavar="ACTION")
    bootstrap_cmd.add_db_commands(csub)
    p = _command(csub, "sync", "migrate every mapped cell's database to the current schema "
                 "(safe to repeat)", run_dir=False)
    p.add_argument("--cell_uuid", metavar="UUID", help="only this cell (uuid or name)")
    p.set_defaults(func=cmd_db_sync)


def _doc_block() -> str:
    doc = __doc__ or ""
    return doc[doc.index("Commands"):]


def _command(sub: Any, name: str, text: str, run_dir: bool = True) -> argparse.ArgumentParser:
    p = common.add_parser(sub, name, help=text, description=text[0].upper() + text[1:]
                          + ". The API database is [api_database] connection (default: "
                          "api.db in the data directory).")
    common.add_config_args(p)
    if run_dir:
        p.add_argument("--run-dir", metavar="DIR",
                       help="where running schedulers register (default: run/ in the data "
                       "directory)")
    return p


# ---- plumbing ----------------------------------------------------------------------


def _config(args: argparse.Namespace) -> configuration.Config:
    return common.load_config(args)


def api_db_url(config: configuration.Config) -> str:
    url = str(config.get("api_database", "connection"))
    return url or f"sqlite:///{os.path.join(os.path.abspath(config.data_dir), 'api.db')}"


def _migrations() -> str:
    import stratus.api

    return os.path.join(os.path.dirname(stratus.api.__file__), "migrations")


def _connect(url: str, create: bool = False) -> Any:
    """The API database; a SQLite file is created only by ``api_db sync`` (``create``)."""
    from stratus.storage import engine as db

    shown = common.redact(url)
    try:
        engine = db.create_engine(url, create=create)
    except db.NoSuchDirectory as exc:
        common.fail(f"cannot use the API database URL {shown}: {exc}", common.USAGE_ERROR)
    except db.NoSuchDatabase as exc:
        common.fail(common.missing_database("API", exc.path, "stratus-manage api_db sync"))
    except Exception as exc:
        common.fail(f"cannot use the API database URL {shown}: {common.db_error(exc)}",
                    common.USAGE_ERROR)
    try:
        db.wait_for(engine, seconds=DB_WAIT_SECONDS)
    except Exception as exc:
        engine.dispose()
        common.fail(f"cannot connect to the API database at {shown}: {common.db_error(exc)}")
    return engine


def _api_engine(config: configuration.Config) -> Any:
    """The API database, which must be at the current schema."""
    from stratus.storage import migrate

    url = api_db_url(config)
    engine = _connect(url)
    current = migrate.current(engine)
    if current != migrate.head(_migrations()):
        engine.dispose()
        state = f"at revision {current}" if current else "empty"
        common.fail(f"the API database at {common.redact(url)} is {state}, not at the "
                    "current schema (run: stratus-manage api_db sync)")
    return engine


def _with_api(args: argparse.Namespace, work: Callable[[configuration.Config, Any], int]) -> int:
    from stratus.cells.mappings import CellError, CellNotFound

    config = _config(args)
    engine = _api_engine(config)
    try:
        return work(config, engine)
    except CellNotFound as exc:
        common.fail(str(exc), NOT_FOUND)
    except CellError as exc:
        common.fail(str(exc), REFUSED)
    finally:
        engine.dispose()


def _tell_schedulers(args: argparse.Namespace, config: configuration.Config) -> None:
    from stratus.cells import notify

    run_dir = args.run_dir or os.path.join(config.data_dir, "run")
    told = notify.signal_schedulers(run_dir)
    interval = config.get("scheduler", "cell_cache_refresh_interval")
    later = (f"others reload within {interval}s ([scheduler] cell_cache_refresh_interval)"
             if interval else "others reload only on SIGHUP")
    print(f"Told {told} running scheduler(s) on this machine to reload the cell list; "
          f"{later}.", flush=True)


def _warn(message: str) -> None:
    print(f"warning: {common.one_line(message)}", file=sys.stderr, flush=True)


def mask_url(url: str) -> str:
    """``url`` with any password replaced by ****; unparsable text is masked entirely
    if it looks like it could hold credentials."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return MASK if "@" in url else url
    if not password:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{hostinfo}"))


def _check_database_url(url: str, flag: str = "--database_connection") -> None:
    import sqlalchemy as sa

    try:
        sa.engine.make_url(url)
    except Exception:
        common.fail(f"{flag}: not a database URL: {mask_url(url)}", common.USAGE_ERROR)


def _check_transport_url(url: str) -> None:
    scheme = urlsplit(url).scheme
    if scheme not in ("inproc", "amqp", "amqps", "none"):
        common.fail(f"--transport-url: unsupported URL {mask_url(url)} (use amqp://... , "
                    "inproc://NAME, or none:/// for a cell without a bus)", common.USAGE_ERROR)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A bordered text table, as nova-manage prints them."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in r]
                                           for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(values: list[str]) -> str:
        return "|" + "|".join(f" {v:<{w}} " for v, w in zip(values, widths, strict=True)) + "|"

    out = [rule, line(cells[0]), rule, *(line(r) for r in cells[1:]), rule]
    return "\n".join(out)


def _label(cell: Any) -> str:
    return f"{cell.name} ({cell.uuid})" if cell.name else cell.uuid


def _taken_by(conn: Any, transport_url: str, database_connection: str,
              but: str | None = None) -> str | None:
    """The uuid of another cell using this exact transport URL + database pair."""
    from stratus.cells import mappings

    for cell in mappings.list_cells(conn):
        if cell.uuid != but and cell.transport_url == transport_url \
                and cell.database_connection == database_connection:
            return cell.uuid
    return None


# ---- commands ----------------------------------------------------------------------


def default_cell0_url(api_url: str) -> str:
    """Where cell0 lives unless told: beside a SQLite API database, else ``<api db>_cell0``."""
    import sqlalchemy as sa

    url = sa.engine.make_url(api_url)
    if url.get_backend_name() == "sqlite":
        path = url.database or ""
        if path in ("", ":memory:"):
            return "sqlite://"
        return f"sqlite:///{os.path.join(os.path.dirname(os.path.abspath(path)), 'cell0.db')}"
    return url.set(database=f"{url.database}_cell0").render_as_string(hide_password=False)


def cmd_map_cell0(args: argparse.Namespace) -> int:
    from stratus.cells import mappings
    from stratus.storage import engine as db

    def work(config: configuration.Config, engine: Any) -> int:
        url = args.database_connection or str(config.get("database", "connection")) or \
            default_cell0_url(api_db_url(config))
        _check_database_url(url)
        with db.write(engine) as conn:
            try:
                found = mappings.get_cell(conn, mappings.CELL0_UUID)
            except mappings.CellNotFound:
                found = None
            if found is None:
                mappings.create_cell(conn, mappings.CELL0_NAME, CELL0_TRANSPORT_URL, url,
                                     uuid=mappings.CELL0_UUID)
        if found is not None:
            print(f"Cell0 is already set up (database {mask_url(found.database_connection)}).")
        else:
            print(f"Created cell0 ({mappings.CELL0_UUID}), database {mask_url(url)}.")
        return 0

    return _with_api(args, work)


def cmd_create_cell(args: argparse.Namespace) -> int:
    from stratus.cells import mappings
    from stratus.storage import engine as db

    def work(config: configuration.Config, engine: Any) -> int:
        transport_url = args.transport_url or str(config.get("DEFAULT", "transport_url"))
        if not transport_url:
            common.fail("no transport URL: give --transport-url or set [DEFAULT] "
                        "transport_url", common.USAGE_ERROR)
        database = args.database_connection or str(config.get("database", "connection"))
        if not database:
            common.fail("no database: give --database_connection or set [database] "
                        "connection ($OS_DATABASE__CONNECTION)", common.USAGE_ERROR)
        _check_transport_url(transport_url)
        _check_database_url(database)
        with db.write(engine) as conn:
            other = _taken_by(conn, transport_url, database)
            if other:
                raise mappings.CellError(
                    f"The transport URL and database connection given are already those of "
                    f"cell {other}.")
            cell = mappings.create_cell(conn, args.name, transport_url, database,
                                        disabled=args.disabled)
        if args.verbose:
            # The uuid alone on the first line, as nova-manage prints it (scripts read it).
            print(cell.uuid)
            print(f"  name:                {cell.name or '-'}")
            print(f"  transport URL:       {mask_url(cell.transport_url)}")
            print(f"  database connection: {mask_url(cell.database_connection)}")
            print(f"  {'disabled' if cell.disabled else 'enabled'}")
        else:
            print(f"Created cell {_label(cell)}, "
                  f"{'disabled' if cell.disabled else 'enabled'}.")
        _tell_schedulers(args, config)
        return 0

    return _with_api(args, work)


def cmd_update_cell(args: argparse.Namespace) -> int:
    from stratus.cells import mappings
    from stratus.storage import engine as db

    if not any((args.name, args.transport_url, args.database_connection, args.disable,
                args.enable)):
        common.fail("nothing to update: give --name, --transport-url, --database_connection, "
                    "--disable or --enable", common.USAGE_ERROR)
    if args.transport_url:
        _check_transport_url(args.transport_url)
    if args.database_connection:
        _check_database_url(args.database_connection)
    disabled = True if args.disable else False if args.enable else None

    def work(config: configuration.Config, engine: Any) -> int:
        with db.write(engine) as conn:
            cell = mappings.get_cell(conn, args.cell_uuid)
            if args.name and args.name != cell.name and any(
                    c.name == args.name for c in mappings.list_cells(conn)):
                raise mappings.CellError(f"A cell named {args.name} already exists.")
            other = _taken_by(conn, args.transport_url or cell.transport_url,
                              args.database_connection or cell.database_connection,
                              but=cell.uuid)
            if other and (args.transport_url or args.database_connection):
                raise mappings.CellError(
                    f"The transport URL and database connection would be those of "
                    f"cell {other}.")
            cell = mappings.update_cell(
                conn, cell.uuid, name=args.name, transport_url=args.transport_url,
                database_connection=args.database_connection, disabled=disabled)
        changed = [what for what, given in (("name", args.name),
                                            ("transport URL", args.transport_url),
                                            ("database connection", args.database_connection))
                   if given]
        if disabled is not None:
            changed.append("disabled" if disabled else "enabled")
        print(f"Updated cell {_label(cell)}: {', '.join(changed)}.")
        _tell_schedulers(args, config)
        return 0

    return _with_api(args, work)


def cmd_delete_cell(args: argparse.Namespace) -> int:
    from stratus.cells import mappings
    from stratus.storage import engine as db

    def work(config: configuration.Config, engine: Any) -> int:
        with db.write(engine) as conn:
            cell = mappings.get_cell(conn, args.cell_uuid)
            hosts = len(mappings.list_hosts(conn, cell.uuid))
            mappings.delete_cell(conn, cell.uuid, force=args.force)
        extra = f" and its {hosts} host mapping(s)" if hosts else ""
        print(f"Deleted cell {_label(cell)}{extra}.")
        _tell_schedulers(args, config)
        return 0

    return _with_api(args, work)


def cmd_list_cells(args: argparse.Namespace) -> int:
    from stratus.cells import mappings
    from stratus.storage import engine as db

    def work(_config: configuration.Config, engine: Any) -> int:
        with db.read(engine) as conn:
            cells = sorted(mappings.list_cells(conn), key=lambda c: (c.name or "", c.uuid))
        show = (lambda u: u) if args.verbose else mask_url
        print(table(["Name", "UUID", "Transport URL", "Database Connection", "Disabled"],
                    [(c.name or "", c.uuid, show(c.transport_url), show(c.database_connection),
                      c.disabled) for c in cells]))
        return 0

    return _with_api(args, work)


def cmd_list_hosts(args: argparse.Namespace) -> int:
    from stratus.cells import mappings
    from stratus.storage import engine as db

    def work(_config: configuration.Config, engine: Any) -> int:
        with db.read(engine) as conn:
            uuid = mappings.get_cell(conn, args.cell_uuid).uuid if args.cell_uuid else None
            hosts = mappings.list_hosts(conn, uuid)
        print(table(["Cell Name", "Cell UUID", "Hostname"], hosts))
        return 0

    return _with_api(args, work)


def cmd_discover_hosts(args: argparse.Namespace) -> int:
    import logging

    from stratus.cells.discovery import discover_hosts
    from stratus.cells.engines import CellEngines

    # A cell that cannot be read is reported below, once, in the command's words.
    logging.getLogger("stratus.cells.scatter").setLevel(logging.CRITICAL)

    def work(config: configuration.Config, engine: Any) -> int:
        engines = CellEngines()
        try:
            results = discover_hosts(engine, engines, args.cell_uuid,
                                     timeout=float(config.get("scheduler", "cell_timeout")))
        finally:
            engines.dispose()
        failed = False
        for r in results:
            if args.verbose:
                print(f"Cell {_label(r.cell)}: {len(r.hosts)} compute host(s) in its "
                      f"database, {len(r.mapped)} newly mapped")
                for host in r.mapped:
                    print(f"  mapped {host}")
            if r.error:
                failed = True
                _warn(f"cell {_label(r.cell)} skipped: its database could not be read "
                            f"({r.error})")
            for host, other in sorted(r.conflicts.items()):
                failed = True
                _warn(f"host {host} is in the database of cell {_label(r.cell)} but "
                            f"mapped to cell {other}; left as it is")
        mapped = sum(len(r.mapped) for r in results)
        print(f"Found {sum(len(r.hosts) for r in results)} compute host(s) in "
              f"{len(results)} cell(s); mapped {mapped} new.")
        return NOT_FOUND if failed else 0

    return _with_api(args, work)


def cmd_api_db_sync(args: argparse.Namespace) -> int:
    from stratus.storage import migrate

    config = _config(args)
    common.make_data_dir(api_db_url(config), config.data_dir)
    engine = _connect(api_db_url(config), create=True)
    try:
        try:
            migrate.upgrade(engine, _migrations())
        except Exception as exc:
            common.fail(f"cannot migrate the API database: {common.db_error(exc)}")
        print(f"API database at revision {migrate.current(engine)}")
    finally:
        engine.dispose()
    return 0


def cmd_api_db_version(args: argparse.Namespace) -> int:
    from stratus.storage import engine as db
    from stratus.storage import migrate

    config = _config(args)
    url = api_db_url(config)
    try:
        db.create_engine(url, create=False).dispose()
    except db.NoSuchDatabase as exc:
        # Asking must not create an empty database file as a side effect.
        print(f"empty: no database file at {exc.path} (run: stratus-manage api_db sync)")
        return 0
    except Exception:
        pass   # _connect says what is wrong with the URL
    engine = _connect(url)
    try:
        print(migrate.current(engine) or "empty (run: stratus-manage api_db sync)")
    finally:
        engine.dispose()
    return 0


def cmd_db_sync(args: argparse.Namespace) -> int:
    import stratus.cells
    from stratus.cells import mappings
    from stratus.storage import engine as db
    from stratus.storage import migrate

    location = os.path.join(os.path.dirname(stratus.cells.__file__), "migrations")

    def work(_config: configuration.Config, engine: Any) -> int:
        with db.read(engine) as conn:
            cells = ([mappings.get_cell(conn, args.cell_uuid)] if args.cell_uuid
                     else mappings.list_cells(conn))
        failed = False
        for cell in cells:
            try:
                cell_engine = db.create_engine(cell.database_connection)
            except Exception as exc:
                failed = True
                _warn(f"cell {_label(cell)}: cannot use its database URL: "
                      f"{common.db_error(exc)}")
                continue
            try:
                migrate.upgrade(cell_engine, location)
                print(f"cell {_label(cell)}: database at revision "
                      f"{migrate.current(cell_engine)}")
            except Exception as exc:
                failed = True
                _warn(f"cell {_label(cell)}: cannot migrate its database "
                      f"{mask_url(cell.database_connection)}: {common.db_error(exc)}")
            finally:
                cell_engine.dispose()
        return NOT_FOUND if failed else 0

    return _with_api(args, work)
