"""``stratus serve --hosts 1000``: a laptop-sized simulation of a real fleet (slow: run with
``-m slow``). No timing assertions; the test's own timeout is the only clock."""

from __future__ import annotations

import signal
import time

import pytest

from tests.functional.test_serve import Serve, host_of

pytestmark = pytest.mark.slow


def test_a_thousand_hosts_start_serve_and_stop(tmp_path):
    data = tmp_path / "data"
    srv = Serve(tmp_path, data, "--hosts", "1000", "--cells", "3")
    try:
        srv.wait_ready(timeout=600)
        out = srv.output()
        assert "starting hosts: 1000/1000" in out   # progress was shown
        providers = srv.placement("/resource_providers")["resource_providers"]
        assert len(providers) == 1000
        assert len(srv.client_json("service", "list")) == 1000
        [vm] = srv.boot("one-of-a-thousand")
        assert host_of(vm).startswith("compute")
        assert srv.stop() == 0
    finally:
        srv.kill()

    # Interrupted while its thousand hosts start: it stops what it started and says so.
    again = Serve(tmp_path, data)
    try:
        deadline = time.monotonic() + 300
        while "starting hosts: " not in again.output():
            assert again.proc.poll() is None, again.output()
            assert time.monotonic() < deadline, again.output()
            time.sleep(0.05)
        assert again.stop(signal.SIGINT) == 130, again.output()
        assert "interrupted while starting; stopped" in again.output()
        assert "Traceback" not in again.output()
    finally:
        again.kill()
