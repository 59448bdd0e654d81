"""``placement-api --workers N`` killed with SIGKILL takes its workers with it, and a start
that finds a stale listener on its port says which process holds it, in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from stratus.web import workers
from tests.functional import cli_helpers

pytestmark = pytest.mark.timeout(180)


def children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent_and_the_port_is_free_again(tmp_path):
    with cli_helpers.server(tmp_path, "--db", f"sqlite:///{tmp_path}/p.db",
                            "--workers", "2") as srv:
        deadline = time.monotonic() + 30
        while len(kids := children(srv.proc.pid) - {srv.proc.pid}) < 2:
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.2)
        kids = {k for k in kids if alive(k)}
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(10)
        deadline = time.monotonic() + 20
        while any(alive(k) for k in kids):
            assert time.monotonic() < deadline, f"workers {kids} outlived their parent"
            time.sleep(0.2)
        with pytest.raises(httpx.TransportError):
            httpx.get(srv.url + "/", timeout=2)
        port = srv.port
    again = subprocess.Popen([*cli_helpers.command("stratus"), "placement-api", "--db",
                              f"sqlite:///{tmp_path}/p.db", "--port", str(port)],
                             env=cli_helpers.clean_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        srv2 = cli_helpers.Server(again, port, tmp_path / "none.log")
        srv2.wait_ready(30)
    finally:
        again.terminate()
        again.wait(20)


STALE = """
import os, socket, sys, time
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.listen()
print("listening", flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_start_on_a_port_a_stale_worker_holds_names_it(tmp_path):
    port = cli_helpers.free_port()
    # A worker whose parent (that pid) is not its parent any more: a killed server's.
    env = dict(os.environ, **{workers.PARENT_ENV: "999999"})
    stale = subprocess.Popen([sys.executable, "-c", STALE, str(port)], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert stale.stdout is not None and stale.stdout.readline().strip() == "listening"
        result = cli_helpers.run("stratus", "placement-api", "--db",
                                 f"sqlite:///{tmp_path}/p.db", "--port", str(port))
        assert result.returncode == 1
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"error: cannot listen on 127.0.0.1:{port}: Address already in "
                               f"use (held by pid {stale.pid} (")
        assert "a stale listener left by a server that was killed" in line
        assert f"kill {stale.pid}" in line
    finally:
        stale.kill()
        stale.wait(10)


def test_listening_sockets_are_read_from_a_proc_net_table():
    table = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:2242 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
        "       0 4242 1 0000000000000000 100 0 0 10 0\n"
        "   1: 0100007F:2242 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0 "
        "       0 4343 1 0000000000000000 20 4 30 10 -1\n"
        "   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
        "       0 4444 1 0000000000000000 100 0 0 10 0\n")
    assert workers.listening_inodes(table, 0x2242) == {"4242"}   # not the connection
    assert workers.listening_inodes(table, 8080) == {"4444"}
    assert workers.listening_inodes(table, 9) == set()
