"""Cell cache refresh (signal flag, interval) and scatter-gather across cells."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from stratus.cells import notify
from stratus.cells.cache import CellCache
from stratus.cells.mappings import CELL0_UUID, CellMapping
from stratus.cells.scatter import CellPool, scatter_gather


def cell(name: str, disabled: bool = False, uuid: str | None = None) -> CellMapping:
    return CellMapping(uuid or f"uuid-{name}", name, f"inproc://{name}", "sqlite://", disabled)


class Source:
    def __init__(self, cells):
        self.cells = cells
        self.loads = 0

    def __call__(self):
        self.loads += 1
        return list(self.cells)


def test_enabled_excludes_disabled_and_cell0():
    src = Source([cell("cell0", uuid=CELL0_UUID), cell("a"), cell("b", disabled=True)])
    cache = CellCache(src, refresh_interval=0)
    assert [c.name for c in cache.enabled()] == ["a"]


def test_cached_until_flagged_stale():
    src = Source([cell("a")])
    cache = CellCache(src, refresh_interval=0)
    cache.enabled()
    src.cells = [cell("a", disabled=True)]
    assert [c.name for c in cache.enabled()] == ["a"]      # still cached
    cache.request_refresh()
    assert cache.enabled() == []
    assert src.loads == 2


def test_interval_refresh_without_signal():
    now = [0.0]
    src = Source([cell("a")])
    cache = CellCache(src, refresh_interval=30, clock=lambda: now[0])
    cache.enabled()
    src.cells = []
    now[0] = 29.0
    assert len(cache.enabled()) == 1
    now[0] = 30.0
    assert cache.enabled() == []


def test_find_by_uuid_or_name_reloads_once_for_a_cell_it_lacks():
    src = Source([cell("a")])
    cache = CellCache(src, refresh_interval=0)
    assert cache.find("a").uuid == "uuid-a"
    assert cache.find("uuid-a").name == "a"
    assert src.loads == 1                       # answered from the cache
    src.cells = [cell("a"), cell("b")]          # a cell made since the cache loaded
    assert cache.find("uuid-b").name == "b"
    assert src.loads == 2
    assert cache.find("nowhere") is None        # one reload, then not found
    assert src.loads == 3


def test_covering_reloads_when_a_mapping_names_an_unknown_cell():
    src = Source([cell("a"), cell("b")])
    cache = CellCache(src, refresh_interval=0)
    assert [c.name for c in cache.covering({"uuid-b"})] == ["b"]
    src.cells = [cell("a"), cell("b"), cell("c")]
    assert [c.name for c in cache.covering({"uuid-a"})] == ["a"]
    assert src.loads == 1
    assert [c.name for c in cache.covering({"uuid-a", "uuid-c"})] == ["a", "c"]
    assert src.loads == 2


def test_sighup_marks_stale_in_a_real_process(tmp_path):
    """A separate process registered as a scheduler reloads after signal_schedulers()."""
    script = tmp_path / "sched.py"
    flag = tmp_path / "reloaded"
    script.write_text(f"""
import time, sys
from stratus.cells.cache import CellCache
from stratus.cells import notify
loads = []
cache = CellCache(lambda: loads.append(1) or [], refresh_interval=0)
cache.install_sighup()
cache.enabled()
with notify.registered({str(tmp_path)!r}):
    print("ready", flush=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        cache.enabled()
        if len(loads) >= 2:
            open({str(flag)!r}, "w").write("yes")
            break
        time.sleep(0.01)
""")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert notify.signal_schedulers(str(tmp_path)) == 1
        proc.wait(timeout=10)
        assert flag.read_text() == "yes"
    finally:
        proc.kill()


def test_signal_forgets_dead_schedulers(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f"scheduler-{dead.pid}.pid").write_text(str(dead.pid))
    assert notify.signal_schedulers(str(tmp_path)) == 0
    assert not os.listdir(tmp_path)


def test_scatter_skips_failing_and_slow_cells():
    cells = [cell("ok"), cell("broken"), cell("slow")]

    def ask(c):
        if c.name == "broken":
            raise ConnectionError("database unreachable")
        if c.name == "slow":
            time.sleep(2)
        return c.name.upper()

    started = time.monotonic()
    got = scatter_gather(cells, ask, timeout=0.5)
    assert got.results == {"uuid-ok": "OK"}
    assert "database unreachable" in got.failures["uuid-broken"]
    assert "no answer" in got.failures["uuid-slow"]
    assert time.monotonic() - started < 1.9   # did not wait for the slow cell


def test_a_kept_pool_asks_cells_on_the_same_threads():
    pool = CellPool(size=4)
    seen: set[int] = set()

    def ask(c):
        seen.add(threading.get_ident())
        return c.name

    try:
        for _ in range(50):
            got = pool.gather([cell("a"), cell("b")], ask, timeout=5)
            assert got.results == {"uuid-a": "a", "uuid-b": "b"}
    finally:
        pool.close()
    assert len(seen) <= 4   # not two new threads per question


def test_cells_that_hang_in_the_kept_pool_do_not_starve_the_healthy_ones():
    pool = CellPool(size=2)
    release = threading.Event()

    def ask(c):
        if c.name.startswith("hung"):
            release.wait(10)
        return c.name

    try:
        got = pool.gather([cell("hung-1"), cell("hung-2")], ask, timeout=0.2)
        assert set(got.failures) == {"uuid-hung-1", "uuid-hung-2"}
        assert not pool.room(1)   # both kept threads are still inside their cells
        # Queued behind the hung ones it would get no answer in time: it gets a pool
        # of its own.
        got = pool.gather([cell("ok")], ask, timeout=2)
        assert got.results == {"uuid-ok": "ok"}
    finally:
        release.set()
        pool.close()
    deadline = time.monotonic() + 5
    while not pool.room(2):   # the hung ones came back: their threads are free again
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_signal_module_constant():
    assert signal.SIGHUP  # POSIX only: Stratus's scheduler refresh relies on it
