"""``stratus-manage``: database and operator maintenance commands.

``stratus-manage placement db sync`` and ``db version`` work as
``placement-manage db sync`` / ``db version`` do, on SQLite, PostgreSQL and
MariaDB, reading the same placement.conf. ``db check-usage`` checks (and with
``--fix`` repairs) the running usage totals against the allocations.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from stratus import config as configuration
from stratus.cli import bootstrap_cmd, bus_keys_cmd, cell_v2, common, identity_manage

DB_WAIT_SECONDS = 5.0


def build_parser() -> argparse.ArgumentParser:
    parser = common.ArgumentParser(
        prog="stratus-manage",
        description="Stratus maintenance: database migrations and operator repairs.",
        epilog=configuration.describe_options(),
        formatter_class=common.HelpFormatter,
    )
    common.add_traceback_flag(parser)
    common.add_leading_config_args(parser)
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
    _repair_commands(psub)
    cell_v2.add_commands(top)
    identity_manage.add_commands(top)
    bootstrap_cmd.add_flavor_commands(top)
    bus_keys_cmd.add_commands(top)
    return parser


def _repair_commands(psub: Any) -> None:
    heal = common.add_parser(
        psub, "heal_allocations",
        help="create missing server and port allocations and repair ports' allocation keys",
        description="For each server on a host with no task running: create its allocations "
        "from its flavor when it holds none (or --force); hold what each port's binding "
        "records (binding:profile allocation) where it holds less; and, for each port with a "
        "resource request and no record, allocate the port's groups on the server's own "
        "node and write the providers into the port's binding, only when exactly one way "
        "exists (design document 004, as Nova): a server whose port two NICs could serve is "
        "reported with what to do, and left untouched. It reads the API and cell databases "
        "([api_database] connection) and talks to Placement and the network API "
        "([placement_client] endpoint, [network_client] endpoint). Exit status as "
        "nova-manage's: 0 something was healed, 4 nothing needed healing (and for "
        "--dry-run), 3 a heal failed or a server was left ambiguous, 5 the ports could not "
        "be read, 6 a port could not be updated, 127 bad arguments.")
    common.add_config_args(heal)
    heal.add_argument("--instance", metavar="UUID", help="only this server")
    heal.add_argument("--cell", metavar="UUID", help="only this cell's servers")
    heal.add_argument("--dry-run", action="store_true", help="say what would be done; "
                      "change nothing")
    heal.add_argument("--force", action="store_true",
                      help="rebuild the allocations of --instance from its flavor and ports "
                      "even if it has some")
    heal.add_argument("--verbose", action="store_true", help="also name what was checked")
    heal.set_defaults(func=cmd_heal_allocations)
    audit = common.add_parser(
        psub, "audit",
        help="find allocations no server or migration explains, servers without theirs, "
        "and ports bound where their server is not",
        description="Compare Placement's allocations with the servers and migrations of "
        "every cell and with the network service's ports: allocations of consumers that "
        "are neither a live server nor a migration in progress, migrations that ended "
        "still holding allocations, servers on a host holding nothing there, offloaded "
        "servers holding something, ports bound to a host their server is not on, and "
        "port allocations that do not add up to what the server holds on each provider. "
        "Exit status as nova-manage's: 0 nothing found, 3 findings, 4 findings and "
        "--delete removed the leaked allocations, 1 an error.")
    common.add_config_args(audit)
    audit.add_argument("--delete", action="store_true",
                       help="delete the allocations of orphans, ended migrations and "
                       "offloaded servers")
    audit.add_argument("--verbose", action="store_true", help="say what was checked")
    audit.add_argument("--json", action="store_true", help="print the findings as JSON")
    audit.set_defaults(func=cmd_audit)


@contextlib.contextmanager
def _books(args: argparse.Namespace) -> Iterator[Any]:
    """The data directory's books, with the Placement and network service proven to be
    its own before anything is read from them (``manage_target``); a refusal, or a
    service that stops answering, is one line and exit status 1."""
    import httpx

    from stratus.api.service import api_db_url
    from stratus.cells.engines import CellEngines
    from stratus.cli import manage_target
    from stratus.repair.audit import Books, cells_state

    config = common.load_config(args)
    try:
        target = manage_target.resolve(config)
        refused = None
    except manage_target.ZoneTop as exc:
        common.fail(str(exc))
    except manage_target.Refused as exc:   # said once the databases are known to be there
        target, refused = None, exc
    engine = common.connect(api_db_url(config), DB_WAIT_SECONDS, "API",
                            sync_command="stratus-manage api_db sync")
    engines = CellEngines()
    closers: list[Any] = [engine.dispose, engines.dispose]
    try:
        servers, _, roots = cells_state(engine, engines)
        if refused is not None:
            raise refused
        assert target is not None
        placement, network, more = manage_target.clients(target, config)
        closers += more
        books = Books(engine, engines, placement, network)
        manage_target.prove(target, {uuid: name for name, uuid in roots.items()},
                            set(servers), placement, network)
        for note in target.notes:
            print(f"note: {note}", file=sys.stderr)
        yield books
    except manage_target.Refused as exc:
        common.fail(str(exc))
    except httpx.TransportError as exc:
        common.fail(f"cannot reach {_which(target, exc)}: {common.one_line(str(exc))}")
    finally:
        for close in reversed(closers):
            close()


def _which(target: Any, exc: Exception) -> str:
    """Which service a lost connection was to, as "Placement at URL"."""
    text = str(getattr(getattr(exc, "request", None), "url", "")) or str(exc)
    network = target.network
    if network is not None and network.url and text.startswith(network.url.rstrip("/")):
        return f"the network API at {network.url}"
    return f"Placement at {target.placement.url or 'its database (in-process)'}"


def cmd_heal_allocations(args: argparse.Namespace) -> int:
    from stratus.cells.mappings import list_cells
    from stratus.repair import heal
    from stratus.storage import engine as db

    if args.instance and args.cell:
        common.fail("--instance and --cell cannot be combined", 127)
    if args.force and not args.instance:
        common.fail("--force needs --instance", 127)
    with _books(args) as books:
        with db.read(books.api_engine) as conn:
            cells = [c for c in list_cells(conn) if not c.is_cell0]
        if args.cell:
            cells = [c for c in cells if c.uuid == args.cell]
            if not cells:
                common.fail(f"no cell with uuid {args.cell}", 127)
        if args.instance:
            from stratus.conductor.records import cell_of_instance

            with db.read(books.api_engine) as conn:
                cell = cell_of_instance(conn, args.instance)
            if cell is None or cell.is_cell0:
                common.fail(f"instance {args.instance} is not mapped to a cell with a host",
                            127)
            cells = [cell]
        pairs = ((c.name or c.uuid, books.engines.get(c)) for c in cells)
        try:
            code = heal.heal_all(books.placement, books.network, pairs,
                                 instance_uuid=args.instance, force=args.force,
                                 dry_run=args.dry_run)
        except heal.HealError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.code
    if code == heal.NOTHING_TO_DO:
        print("nothing to heal" if not args.dry_run else "[dry-run] done: nothing changed")
    return code


def cmd_audit(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from stratus.repair import audit

    with _books(args) as books:
        report = audit.audit_report(books)
        findings = report.findings
        deleted = audit.delete_leaks(books, findings) if args.delete else []
    if args.json:
        print(json.dumps({"findings": [dataclasses.asdict(f) for f in findings],
                          "deleted": [f.consumer for f in deleted],
                          "foreign_consumers": report.foreign}, indent=2))
    else:
        for f in findings:
            print(f.line() + ("  (allocations deleted)" if f in deleted else ""))
        if not findings:
            print("the allocations match the servers, migrations and ports")
        elif args.verbose:
            print(f"{len(findings)} finding(s): {audit.summary(findings)}")
        if report.foreign and (args.verbose or not findings):
            print(f"left alone: {report.foreign} consumer(s) holding allocations only on "
                  "providers that are not this deployment's compute nodes")
    if not findings:
        return 0
    return 4 if deleted else 3


def _db_url(args: argparse.Namespace) -> str:
    config = common.load_config(args, {("placement_database", "connection"): args.db})
    return str(config.placement_db_url)


def _engine(args: argparse.Namespace, url: str | None = None, create: bool = False) -> Any:
    return common.connect(url or _db_url(args), DB_WAIT_SECONDS, create=create)


def cmd_db_sync(args: argparse.Namespace) -> int:
    url = _db_url(args)
    common.make_data_dir(url, common.load_config(args).data_dir)
    engine = _engine(args, url, create=True)
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

    url = _db_url(args)
    engine = _engine(args, url)
    if _revision(engine) is None:
        engine.dispose()
        common.fail(f"the placement database at {common.redact(url)} is empty: run this in "
                    "the directory holding stratus serve's data/ (or give --data-dir DIR or "
                    "--db URL); a new database is made by: stratus-manage placement db sync")
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
    common.merge_leading_config_args(args)
    if not getattr(args, "func", None):
        # Nothing to do: what there is, briefly, and exit as argparse does on a usage
        # mistake (2). The full --help lists every configuration option as well.
        print(common.short_help(common.chosen_parser(parser, args)), file=sys.stderr)
        raise SystemExit(common.USAGE_ERROR)
    common.run(lambda: args.func(args), args)


if __name__ == "__main__":
    main()
