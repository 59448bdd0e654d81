"""``stratus-manage cell_v2`` as an operator runs it: subprocesses, exit codes, one-line errors.

The API database is SQLite in a temporary data directory, or (when configured) a
scratch PostgreSQL / MariaDB database given as ``[api_database] connection``
through ``OS_API_DATABASE__CONNECTION``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stratus.allinone.layout import migrate_cell_db
from stratus.cells import services
from stratus.storage import engine as db
from tests.functional import cli_helpers
from tests.functional.test_serve import parse_table

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Manage:
    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir, self.env = data_dir, env

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return cli_helpers.run("stratus-manage", *args, "--data-dir", str(self.data_dir),
                               env=self.env)

    def ok(self, *args: str) -> str:
        result = self(*args)
        assert result.returncode == 0, f"{args}: {result.returncode} {result.stderr}"
        return result.stdout

    def fails(self, code: int, *args: str) -> str:
        """The one error line (stderr) of a command that must exit with ``code``."""
        result = self(*args)
        assert result.returncode == code, f"{args}: {result.returncode} {result.stdout} " \
                                          f"{result.stderr}"
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        return lines[0]

    def cells(self, *flags: str) -> dict[str, dict[str, str]]:
        return {row["Name"]: row for row in parse_table(self.ok("cell_v2", "list_cells",
                                                                *flags))}


# The server backends' variants (about 40 s each for the lifecycle's forty commands) run
# with the long group (.ci/run); SQLite's in the default run.
@pytest.fixture(params=["sqlite", pytest.param("POSTGRES", marks=pytest.mark.long),
                        pytest.param("MYSQL", marks=pytest.mark.long)])
def manage(request, tmp_path) -> Iterator[Manage]:
    if request.param == "sqlite":
        yield Manage(tmp_path, cli_helpers.clean_env())
        return
    with cli_helpers.scratch_database(request.param) as url:
        yield Manage(tmp_path, cli_helpers.clean_env(OS_API_DATABASE__CONNECTION=url))


def cell_db(tmp_path: Path, name: str, hosts: list[str] = ()) -> str:  # type: ignore[assignment]
    """A migrated SQLite cell database where these compute hosts have registered."""
    url = f"sqlite:///{tmp_path}/{name}.db"
    migrate_cell_db(url)
    engine = db.create_engine(url)
    with db.write(engine) as conn:
        for host in hosts:
            services.register(conn, host, "stratus-compute", 1001)
    engine.dispose()
    return url


def test_cells_lifecycle_exit_codes_and_messages(manage, tmp_path):
    assert "run: stratus-manage api_db sync" in manage.fails(1, "cell_v2", "list_cells")
    assert manage.ok("api_db", "sync").startswith("API database at revision ")
    assert manage.ok("api_db", "version").strip() != "empty"

    assert manage.ok("cell_v2", "map_cell0").startswith(
        "Created cell0 (00000000-0000-0000-0000-000000000000)")
    assert manage.ok("cell_v2", "map_cell0").startswith("Cell0 is already set up")

    secret = "amqp://stratus:s3cret@rabbit.example:5672/cell1"
    dburl = "mysql+pymysql://nova:dbpass@db.example/cell1"
    out = manage.ok("cell_v2", "create_cell", "--name", "cell1", "--transport-url", secret,
                    "--database_connection", dburl)
    first = out.splitlines()[0]
    assert re.fullmatch(rf"Created cell cell1 \({UUID.pattern}\), enabled\.", first), out
    cell1 = UUID.search(first).group(0)  # type: ignore[union-attr]
    assert out.splitlines()[1].startswith("Told 0 running scheduler(s)")
    assert manage.fails(3, "cell_v2", "create_cell", "--name", "cell1", "--transport-url",
                        "inproc://x", "--database_connection", "sqlite:///x.db") == \
        "error: A cell named cell1 already exists."
    assert manage.fails(3, "cell_v2", "create_cell", "--name", "other", "--transport-url",
                        secret, "--database_connection", dburl) == (
        f"error: The transport URL and database connection given are already those of "
        f"cell {cell1}.")
    uuid2 = manage.ok("cell_v2", "create_cell", "--name", "cell2", "--transport-url",
                      "inproc://cell2", "--database_connection", "sqlite:///c2.db",
                      "--disabled", "--verbose").splitlines()[0]
    assert UUID.fullmatch(uuid2)
    assert manage.fails(2, "cell_v2", "create_cell", "--name", "c3", "--transport-url",
                        "inproc://c3") == ("error: no database: give --database_connection or "
                                           "set [database] connection "
                                           "($OS_DATABASE__CONNECTION)")
    assert manage.fails(2, "cell_v2", "create_cell", "--name", "c3",
                        "--database_connection", "sqlite:///c3.db") == \
        "error: no transport URL: give --transport-url or set [DEFAULT] transport_url"
    assert manage.fails(2, "cell_v2", "create_cell", "--name", "c3", "--transport-url",
                        "http://nope", "--database_connection", "sqlite:///c3.db").startswith(
        "error: --transport-url: unsupported URL http://nope")

    cells = manage.cells()
    assert set(cells) == {"cell0", "cell1", "cell2"}
    assert cells["cell1"]["Transport URL"] == "amqp://stratus:****@rabbit.example:5672/cell1"
    assert cells["cell1"]["Database Connection"] == "mysql+pymysql://nova:****@db.example/cell1"
    assert (cells["cell1"]["Disabled"], cells["cell2"]["Disabled"]) == ("False", "True")
    assert cells["cell0"]["UUID"] == "00000000-0000-0000-0000-000000000000"
    verbose = manage.cells("--verbose")
    assert verbose["cell1"]["Transport URL"] == secret
    assert verbose["cell1"]["Database Connection"] == dburl

    update = ("cell_v2", "update_cell", "--cell_uuid")
    assert manage.ok(*update, cell1, "--disable").startswith(
        f"Updated cell cell1 ({cell1}): disabled.")
    assert manage.fails(3, *update, cell1, "--disable") == \
        f"error: Cell {cell1} is already disabled."
    assert manage.ok(*update, "cell1", "--enable").startswith(  # a name works too
        f"Updated cell cell1 ({cell1}): enabled.")
    assert manage.fails(3, *update, cell1, "--enable") == \
        f"error: Cell {cell1} is already enabled."
    assert manage.fails(3, *update, "cell0", "--disable") == \
        "error: cell0 cannot be disabled or enabled."
    assert manage.fails(1, *update, "nope", "--disable") == \
        "error: Cell with uuid or name nope was not found."
    assert "not allowed with argument --disable" in manage.fails(
        2, *update, cell1, "--disable", "--enable")
    assert manage.fails(2, *update, cell1).startswith("error: nothing to update")
    assert manage.fails(3, *update, cell1, "--name", "cell2") == \
        "error: A cell named cell2 already exists."
    assert manage.ok(*update, cell1, "--name", "east", "--transport-url",
                     "inproc://east").startswith(
        f"Updated cell east ({cell1}): name, transport URL.")
    assert manage.cells()["east"]["Transport URL"] == "inproc://east"
    assert manage.ok(*update, uuid2, "--enable")
    assert manage.cells()["cell2"]["Disabled"] == "False"

    assert manage.fails(1, "cell_v2", "delete_cell", "--cell_uuid", "nope") == \
        "error: Cell with uuid or name nope was not found."
    assert manage.ok("cell_v2", "delete_cell", "--cell_uuid", uuid2).startswith(
        f"Deleted cell cell2 ({uuid2}).")
    assert set(manage.cells()) == {"cell0", "east"}


def test_discover_hosts_maps_what_each_cell_holds(tmp_path):
    manage = Manage(tmp_path, cli_helpers.clean_env())
    manage.ok("api_db", "sync")
    manage.ok("cell_v2", "map_cell0")
    for name, hosts in (("cell1", ["a1", "a2"]), ("cell2", ["b1", "shared"])):
        manage.ok("cell_v2", "create_cell", "--name", name, "--transport-url",
                  f"inproc://{name}", "--database_connection", cell_db(tmp_path, name, hosts))

    out = manage.ok("cell_v2", "discover_hosts", "--verbose")
    assert "  mapped a1\n  mapped a2\n" in out and "  mapped b1\n  mapped shared\n" in out
    assert out.splitlines()[-1] == "Found 4 compute host(s) in 2 cell(s); mapped 4 new."
    assert manage.ok("cell_v2", "discover_hosts").strip() == \
        "Found 4 compute host(s) in 2 cell(s); mapped 0 new."
    rows = parse_table(manage.ok("cell_v2", "list_hosts"))
    assert {(r["Cell Name"], r["Hostname"]) for r in rows} == {
        ("cell1", "a1"), ("cell1", "a2"), ("cell2", "b1"), ("cell2", "shared")}
    assert {r["Hostname"] for r in parse_table(
        manage.ok("cell_v2", "list_hosts", "--cell_uuid", "cell1"))} == {"a1", "a2"}
    assert manage.fails(1, "cell_v2", "list_hosts", "--cell_uuid", "nope") == \
        "error: Cell with uuid or name nope was not found."

    # A new compute in cell1, the same host name appearing in cell1 too, and a cell
    # whose database cannot be read: the first is mapped, the others reported.
    engine = db.create_engine(f"sqlite:///{tmp_path}/cell1.db")
    with db.write(engine) as conn:
        services.register(conn, "a3", "stratus-compute", 1001)
        services.register(conn, "shared", "stratus-compute", 1001)
    engine.dispose()
    manage.ok("cell_v2", "create_cell", "--name", "broken", "--transport-url",
              "inproc://broken", "--database_connection", f"sqlite:///{tmp_path}/empty.db")
    result = manage("cell_v2", "discover_hosts", "--cell_uuid", "cell1")
    assert result.returncode == 1
    assert result.stdout.strip() == "Found 4 compute host(s) in 1 cell(s); mapped 1 new."
    cell2 = manage.cells()["cell2"]["UUID"]
    assert re.fullmatch(rf"warning: host shared is in the database of cell cell1 "
                        rf"\({UUID.pattern}\) but mapped to cell {cell2}; left as it is",
                        result.stderr.strip())
    result = manage("cell_v2", "discover_hosts")
    assert result.returncode == 1
    assert "warning: cell broken" in result.stderr and "could not be read" in result.stderr
    assert {r["Hostname"] for r in parse_table(
        manage.ok("cell_v2", "list_hosts", "--cell_uuid", "cell1"))} == {"a1", "a2", "a3"}

    assert manage.fails(3, "cell_v2", "delete_cell", "--cell_uuid", "cell1") == (
        f"error: There are 3 host(s) mapped to cell {manage.cells()['cell1']['UUID']}; "
        "pass --force to delete the cell and its host mappings.")
    assert "and its 3 host mapping(s)" in manage.ok("cell_v2", "delete_cell", "--cell_uuid",
                                                    "cell1", "--force")
    assert {r["Hostname"] for r in parse_table(manage.ok("cell_v2", "list_hosts"))} == \
        {"b1", "shared"}


FAKE_SCHEDULER = """
import os, signal, sys, time
from stratus.cells import notify
count = 0
def hup(*_):
    global count
    count += 1
    with open(sys.argv[2], "w") as fh:
        fh.write(str(count))
signal.signal(signal.SIGHUP, hup)
with notify.registered(sys.argv[1]):
    print("ready", flush=True)
    while True:
        time.sleep(0.1)
"""


def test_cell_changes_reach_every_running_scheduler(tmp_path):
    manage = Manage(tmp_path, cli_helpers.clean_env())
    manage.ok("api_db", "sync")
    run_dir = tmp_path / "run"
    counts = [tmp_path / f"hups-{i}" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", FAKE_SCHEDULER, str(run_dir), str(c)],
                              stdout=subprocess.PIPE, text=True, env=cli_helpers.clean_env())
             for c in counts]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        # A scheduler that died without cleaning up is forgotten, not counted.
        (run_dir / "scheduler-999999999.pid").write_text("999999999")

        def told(out: str) -> int:
            match = re.search(r"Told (\d+) running scheduler\(s\)", out)
            assert match, out
            return int(match.group(1))

        assert told(manage.ok("cell_v2", "create_cell", "--name", "c1", "--transport-url",
                              "inproc://c1", "--database_connection", "sqlite:///c1.db")) == 2
        assert told(manage.ok("cell_v2", "update_cell", "--cell_uuid", "c1", "--disable")) == 2
        assert told(manage.ok("cell_v2", "delete_cell", "--cell_uuid", "c1")) == 2
        # A refused change tells nobody.
        manage.fails(1, "cell_v2", "update_cell", "--cell_uuid", "c1", "--enable")
        deadline = time.monotonic() + 30
        while not all(c.exists() and c.read_text() == "3" for c in counts):
            assert time.monotonic() < deadline, [c.read_text() for c in counts if c.exists()]
            time.sleep(0.05)
        assert not (run_dir / "scheduler-999999999.pid").exists()
        assert told(manage.ok("cell_v2", "create_cell", "--name", "c2", "--transport-url",
                              "inproc://c2", "--database_connection", "sqlite:///c2.db",
                              "--run-dir", str(tmp_path / "elsewhere"))) == 0
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)


def test_help_names_every_command_and_flag():
    text = cli_helpers.run("stratus-manage", "cell_v2", "--help").stdout
    for command in ("map_cell0", "create_cell", "update_cell", "delete_cell", "list_cells",
                    "discover_hosts", "list_hosts", "Exit codes"):
        assert command in text, command
    text = cli_helpers.run("stratus-manage", "cell_v2", "update_cell", "--help").stdout
    for flag in ("--cell_uuid", "--name", "--transport-url", "--database_connection",
                 "--disable", "--enable", "--run-dir", "[api_database] connection"):
        assert flag in text, flag
    assert os.path.basename(sys.executable)  # the venv runs the commands


def test_db_sync_migrates_every_mapped_cell_database(tmp_path):
    manage = Manage(tmp_path, cli_helpers.clean_env())
    manage.ok("api_db", "sync")
    manage.ok("cell_v2", "map_cell0")
    manage.ok("cell_v2", "create_cell", "--name", "fresh", "--transport-url", "inproc://f",
              "--database_connection", f"sqlite:///{tmp_path}/fresh.db")
    # Before: a cell whose database has no schema cannot be read.
    assert manage("cell_v2", "discover_hosts").returncode == 1
    out = manage.ok("db", "sync")
    assert re.search(r"cell cell0 \(0{8}-0{4}-0{4}-0{4}-0{12}\): database at revision \w+",
                     out), out
    assert re.search(r"cell fresh \(.*\): database at revision \w+", out), out
    assert manage.ok("cell_v2", "discover_hosts").strip() == \
        "Found 0 compute host(s) in 1 cell(s); mapped 0 new."
    assert manage.ok("db", "sync", "--cell_uuid", "fresh").count("database at revision") == 1


def test_create_cell_verbose_shows_the_cell_with_passwords_masked(tmp_path):
    manage = Manage(tmp_path, cli_helpers.clean_env())
    manage.ok("api_db", "sync")
    out = manage.ok("cell_v2", "create_cell", "--name", "cell7", "--transport-url",
                    "amqp://stratus:bus-secret@rabbit.example:5672/cell7",
                    "--database_connection", "postgresql://stratus:db-secret@db.example/c7",
                    "--verbose")
    lines = out.splitlines()
    assert UUID.fullmatch(lines[0])   # alone on the first line, for scripts
    assert "name:                cell7" in out
    assert "amqp://stratus:****@rabbit.example:5672/cell7" in out
    assert "postgresql://stratus:****@db.example/c7" in out
    assert "bus-secret" not in out and "db-secret" not in out
    assert "  enabled" in lines


def test_flavors_seed_makes_novas_defaults_once(tmp_path):
    manage = Manage(tmp_path, cli_helpers.clean_env())
    assert "api_db sync" in manage.fails(1, "flavors", "seed")
    manage.ok("api_db", "sync")
    first = manage.ok("flavors", "seed")
    assert first.strip() == ("created flavor(s): m1.tiny, m1.small, m1.medium, m1.large, "
                             "m1.xlarge")
    again = manage.ok("flavors", "seed")
    assert again.strip() == "already there: m1.tiny, m1.small, m1.medium, m1.large, m1.xlarge"


def test_a_cell_is_created_from_urls_in_the_environment(tmp_path):
    """Its bus and database from $OS_DEFAULT__TRANSPORT_URL and $OS_DATABASE__CONNECTION:
    their passwords never on a command line."""
    secret_db = f"sqlite:///{tmp_path}/secret-cell.db"
    manage = Manage(tmp_path, cli_helpers.clean_env(
        OS_DEFAULT__TRANSPORT_URL="amqp://stratus:s3cret@rabbit.example:5672/cell1",
        OS_DATABASE__CONNECTION=secret_db))
    manage.ok("api_db", "sync")
    out = manage.ok("cell_v2", "create_cell", "--name", "cell1", "--verbose")
    assert "s3cret" not in out
    assert manage.cells("--verbose")["cell1"]["Database Connection"] == secret_db
