"""``stratus-manage db bootstrap`` and ``stratus-manage flavors seed``: the first steps of
a distributed deployment (docs/ops/deploy.md).

``db bootstrap`` logs in as the database server's administrator and creates the
Stratus user and the databases of a deployment of N cells; ``flavors seed`` puts
Nova's classic flavors in the API database, as ``stratus serve`` does on its first
start. Both are safe to repeat.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from stratus.cli import common

DB_WAIT_SECONDS = 10.0
ADMIN_URL_ENV = "STRATUS_DB_ADMIN_URL"

def add_db_commands(csub: Any) -> None:
    p = common.add_parser(
        csub, "bootstrap",
        help="create the Stratus database user and the databases of a deployment "
        "(PostgreSQL or MariaDB; safe to repeat)",
        description="Log in with --admin-url (an administrator of the PostgreSQL or MariaDB "
        "server) and create what a deployment of --cells cells needs: the user --user with "
        "the password in --password-file, and the databases PREFIX_placement, PREFIX_api, "
        "PREFIX_network, PREFIX_cell0 and PREFIX_cell1..N, owned by (PostgreSQL) or granted "
        "to (MariaDB) that user. What exists is kept; the user's password is set from the "
        "file each time. Prints each database's URL for the services (password shown as "
        "****; --json prints them whole, for scripts). Then run the schema syncs (placement "
        "db sync, api_db sync, db sync).", options=False)
    p.add_argument("--admin-url", metavar="URL",
                   help="administrator's URL, e.g. postgresql://postgres@db/postgres or "
                   "mysql+pymysql://root:PASS@db/mysql (default: $STRATUS_DB_ADMIN_URL, "
                   "which keeps a password off the command line)")
    p.add_argument("--password-file", required=True, metavar="PATH",
                   help="file holding the Stratus user's password (its first line)")
    p.add_argument("--user", default="stratus", help="the user the services connect as "
                   "(default stratus)")
    p.add_argument("--user-host", default="%", metavar="HOST",
                   help="MariaDB: where that user may connect from (default '%%': anywhere)")
    p.add_argument("--prefix", default="stratus",
                   help="database name prefix (default stratus: stratus_placement, ...)")
    p.add_argument("--cells", type=common.positive_int, default=1, metavar="N",
                   help="cell databases to create besides cell0 (default 1)")
    p.add_argument("--json", action="store_true",
                   help="print {role: url} with the password, for scripts")
    p.set_defaults(func=cmd_db_bootstrap)


def add_flavor_commands(top: Any) -> None:
    flavors = common.add_parser(top, "flavors", help="flavors in the API database",
                                description="Flavors in the API database.", options=False)
    fsub = flavors.add_subparsers(dest="action", metavar="ACTION")
    p = common.add_parser(
        fsub, "seed", help="create Nova's default flavors m1.tiny ... m1.xlarge (safe to "
        "repeat)",
        description="Create Nova's classic flavors (m1.tiny 1 vCPU/512 MB/1 GB, m1.small, "
        "m1.medium, m1.large, m1.xlarge; ids 1-5 where free) in the API database "
        "([api_database] connection), as stratus serve does on its first start. Flavors "
        "whose name exists are left as they are.")
    common.add_config_args(p)
    p.set_defaults(func=cmd_flavors_seed)


def _password(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        common.fail(f"cannot read the password file {path}: {exc.strerror}",
                    common.USAGE_ERROR)
    if not lines or not lines[0]:
        common.fail(f"the password file {path} is empty", common.USAGE_ERROR)
    return lines[0]


def cmd_db_bootstrap(args: argparse.Namespace) -> int:
    import os

    from stratus.storage import bootstrap

    args.admin_url = args.admin_url or os.environ.get(ADMIN_URL_ENV, "")
    if not args.admin_url:
        common.fail(f"no administrator's URL: give --admin-url or set ${ADMIN_URL_ENV}",
                    common.USAGE_ERROR)
    password = _password(args.password_file)
    try:
        bootstrap.check_identifier("--prefix", args.prefix)
    except bootstrap.BootstrapError as exc:
        common.fail(str(exc), common.USAGE_ERROR)
    names = bootstrap.database_names(args.prefix, args.cells)
    plan = bootstrap.Plan(args.user, password, tuple(names.values()), args.user_host)
    engine = common.connect(args.admin_url, DB_WAIT_SECONDS, "administrator's")
    try:
        with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
            outcome = bootstrap.apply(conn, plan)
    except bootstrap.BootstrapError as exc:
        common.fail(str(exc), common.USAGE_ERROR)
    except Exception as exc:
        common.fail(f"cannot create the databases: {common.db_error(exc)}")
    finally:
        engine.dispose()
    urls = {role: bootstrap.user_url(args.admin_url, plan, name)
            for role, name in names.items()}
    if args.json:
        print(json.dumps({role: u.render_as_string(hide_password=False)
                          for role, u in urls.items()}, indent=2))
        return 0
    print(f"user {args.user}: {'created' if outcome.user_created else 'exists'}; "
          f"password set from {args.password_file}")
    for role, name in names.items():
        state = "created" if name in outcome.created else "exists"
        print(f"{role:<9} {state:<7} {urls[role].render_as_string(hide_password=True)}")
    return 0


def cmd_flavors_seed(args: argparse.Namespace) -> int:
    from stratus.api import default_flavors
    from stratus.cli.cell_v2 import _api_engine
    from stratus.storage import engine as db

    engine = _api_engine(common.load_config(args))
    try:
        with db.write(engine) as conn:
            created, present = default_flavors.seed(conn)
    finally:
        engine.dispose()
    if created:
        print(f"created flavor(s): {', '.join(created)}")
    if present:
        print(f"already there: {', '.join(present)}")
    return 0
