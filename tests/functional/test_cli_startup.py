"""What a new user meets first, through the installed commands as subprocesses: no
traceback ever, nothing created by commands that only read, one ``stratus serve`` per
data directory, a missing SQLite directory refused, bare commands answered with short
help, and ``--wait`` progress on a terminal only."""

from __future__ import annotations

import os
import pty
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.functional.cli_helpers import clean_env, command, free_port, run, server


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def run_in(cwd: Path, name: str, *args: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(name) + list(args), capture_output=True, text=True,
                          cwd=cwd, env=env or clean_env(), timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """A small ``stratus serve``; yields (server, environment pointing the client at it)."""
    tmp = tmp_path_factory.mktemp("serve")
    with server(tmp, "--data-dir", str(tmp / "data"), "--hosts", "2",
                subcommand="serve") as srv:
        # Placement answers before serve prints the other URLs: wait for all of them.
        deadline = time.monotonic() + 60
        while "Ready in" not in srv.output() and time.monotonic() < deadline:
            time.sleep(0.2)
        api = re.search(r"Compute API:\s+(\S+)", srv.output())
        network = re.search(r"Network API:\s+(\S+)", srv.output())
        assert api and network, srv.output()
        env = clean_env(STRATUS_API_URL=api.group(1).removesuffix("/v2.1"),
                        STRATUS_PLACEMENT_URL=srv.url,
                        STRATUS_NETWORK_URL=network.group(1))
        yield srv, env


# ---- bare commands -----------------------------------------------------------------


@pytest.mark.parametrize(("name", "names"), [
    ("stratus", ["serve", "server", "host", "placement-api"]),
    ("stratus-manage", ["placement", "cell_v2", "api_db"]),
])
def test_a_bare_command_prints_short_help(name, names):
    result = run(name)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    text = result.stderr
    assert text.startswith("usage: ")
    for sub in names:
        assert re.search(rf"^  {re.escape(sub)}\s+\S", text, re.M), text
    assert f"{name} --help" in text
    # Short: one line per command, not the configuration reference --help ends with.
    assert len(text.splitlines()) < 40 and "OS_PLACEMENT_DATABASE__CONNECTION" not in text


# ---- outside a data directory ------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["placement", "db", "check-usage"],
    ["placement", "audit"],
    ["placement", "heal_allocations"],
    ["cell_v2", "list_cells"],
    ["cell_v2", "discover_hosts"],
    ["cell_v2", "map_cell0"],
])
def test_commands_run_outside_a_data_directory_say_so_and_create_nothing(tmp_path, argv):
    result = run_in(tmp_path, "stratus-manage", *argv)
    line = one_line_error(result, "database at", str(tmp_path / "data"), "--data-dir")
    assert "db sync" in line
    assert list(tmp_path.iterdir()) == []


def test_identity_list_outside_a_data_directory_creates_nothing(tmp_path):
    result = run_in(tmp_path, "stratus-manage", "identity", "list")
    line = one_line_error(result, "no identity database at", str(tmp_path / "data"))
    assert "stratus-manage identity bootstrap" in line
    assert list(tmp_path.iterdir()) == []


def test_version_commands_outside_a_data_directory_create_nothing(tmp_path):
    for argv in (["placement", "db", "version"], ["api_db", "version"]):
        result = run_in(tmp_path, "stratus-manage", *argv)
        assert result.returncode == 0 and result.stdout.startswith("empty"), result
    assert list(tmp_path.iterdir()) == []


def test_an_empty_database_is_one_line_saying_what_to_run(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "placement.db").touch()
    (tmp_path / "data" / "api.db").touch()
    one_line_error(run_in(tmp_path, "stratus-manage", "placement", "db", "check-usage"),
                   "is empty", "stratus-manage placement db sync")
    one_line_error(run_in(tmp_path, "stratus-manage", "cell_v2", "list_cells"),
                   "api_db sync")


def test_a_missing_table_is_one_line_and_the_traceback_waits_for_debug(tmp_path):
    # heal_allocations reads the API database without checking its schema first.
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "api.db").touch()
    line = one_line_error(run_in(tmp_path, "stratus-manage", "placement", "heal_allocations"),
                          "no such table", "api_db sync")
    assert "--data-dir" in line
    debug = run_in(tmp_path, "stratus-manage", "placement", "heal_allocations",
                   env=clean_env(STRATUS_DEBUG="1"))
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_commands_that_make_a_database_still_do(tmp_path):
    # ... and the data directory (./data) their default files live in, as serve does.
    for argv in (["placement", "db", "sync"], ["api_db", "sync"]):
        result = run_in(tmp_path, "stratus-manage", *argv)
        assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "data").glob("*.db")) == ["api.db",
                                                                         "placement.db"]


# ---- a SQLite path whose directory is missing --------------------------------------


@pytest.mark.parametrize("argv", [
    ["stratus", "placement-api", "--db", "sqlite:///{missing}/p.db", "--port", "{port}"],
    ["stratus", "network-api", "--db", "sqlite:///{missing}/n.db", "--port", "{port}"],
    ["stratus", "api", "--api-db", "sqlite:///{missing}/api.db", "--sync-db",
     "--port", "{port}"],
    ["stratus-manage", "placement", "db", "sync", "--db", "sqlite:///{missing}/p.db"],
])
def test_a_sqlite_path_in_a_missing_directory_is_an_error(tmp_path, argv):
    missing = tmp_path / "no" / "such" / "dir"
    args = [a.format(missing=missing, port=free_port()) for a in argv]
    one_line_error(run(*args), "does not exist", str(missing))
    assert not (tmp_path / "no").exists()


# ---- one serve per data directory ----------------------------------------------------


def test_a_second_serve_on_one_data_directory_is_refused(tmp_path):
    data = tmp_path / "data"
    with server(tmp_path, "--data-dir", str(data), "--hosts", "1",
                subcommand="serve") as first:
        second = run("stratus", "serve", "--data-dir", str(data), "--hosts", "1",
                     "--port", "0", "--api-port", "0", "--network-port", "0")
        assert second.returncode == 1
        one_line_error(second, str(data), f"pid {first.proc.pid}")
        first.proc.kill()   # a crash: the kernel drops the lock with the process
        first.proc.wait(timeout=20)
    with server(tmp_path, "--data-dir", str(data), "--hosts", "1", subcommand="serve"):
        pass   # started: nothing stale held the directory


# ---- broken pipes ----------------------------------------------------------------------


def _pipeline(left: list[str], right: str, env: dict[str, str]) -> tuple[str, str, int]:
    """``left | right`` in a shell: (stdout, stderr, left's exit status)."""
    script = f"{shlex.join(left)} | {right}; echo \"status=${{PIPESTATUS[0]}}\" >&2"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)
    status = re.search(r"status=(\d+)", done.stderr)
    assert status, done.stderr
    return done.stdout, done.stderr[:status.start()], int(status.group(1))


def test_a_reader_that_goes_away_is_no_traceback(cloud):
    _, env = cloud
    for argv in (["host", "usage"], ["flavor", "list"], ["service", "list"]):
        # `true` exits before stratus writes: every write meets a closed pipe.
        out, err, status = _pipeline(command("stratus") + argv, "true", env)
        assert err == "", err
        assert status == 141   # as a program killed by SIGPIPE
        out, err, status = _pipeline(command("stratus") + argv, "head -1", env)
        assert "Traceback" not in err and err == "", err
        assert out.startswith(("Host", "ID")), out


# ---- --wait progress --------------------------------------------------------------------


def _create_on_a_terminal(env: dict[str, str], name: str) -> tuple[str, str, int]:
    """server create --wait with stderr on a pseudo-terminal and stdout on a pipe."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*command("stratus"), "server", "create", name, "--flavor", "m1.tiny",
         "--count", "3", "--wait"],
        stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env, text=True)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:   # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = proc.stdout.read() if proc.stdout else ""
    proc.wait(timeout=60)
    return out, seen.decode(errors="replace"), proc.returncode


def test_wait_shows_progress_on_a_terminal_and_not_when_piped(cloud):
    _, env = cloud
    out, terminal, code = _create_on_a_terminal(env, "tty")
    assert code == 0, terminal
    assert re.search(r"waiting: (\d+ (ACTIVE|BUILD)(, )?)+ \(\d+ s\)", terminal), terminal
    assert terminal.endswith("\r\x1b[K")   # the line is erased before the result
    assert "waiting" not in out and "tty-1" in out
    piped = run("stratus", "server", "create", "piped", "--flavor", "m1.tiny", "--count",
                "3", "--wait", env=env)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and "piped-1" in piped.stdout
