"""The all-in-one assembly in this process: what a subprocess cannot show (its threads, its
bulk first pass against what the computes themselves would have written)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from stratus.allinone import seed
from stratus.allinone.cloud import AllInOne
from tests.functional.serve_helpers import serve_in

ADMIN = {"X-Auth-Token": "admin"}


def make(tmp_path, hosts: int = 3, cells: int = 2) -> AllInOne:
    return serve_in(tmp_path, hosts, cells)


def boot(cloud: AllInOne, name: str) -> dict:
    headers = {**ADMIN, "OpenStack-API-Version": "compute 2.88"}
    resp = httpx.post(cloud.api_url + "/servers", headers=headers, timeout=30, json={
        "server": {"name": name, "flavorRef": "1"}})
    assert resp.status_code == 202, resp.text
    uuid = resp.json()["server"]["id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        server = httpx.get(f"{cloud.api_url}/servers/{uuid}", headers=headers,
                           timeout=30).json()["server"]
        if server["status"] in ("ACTIVE", "ERROR"):
            return dict(server)
        time.sleep(0.05)
    raise AssertionError(f"server {name} did not settle")


def test_stop_joins_every_thread_it_started(tmp_path):
    before = set(threading.enumerate())
    cloud = make(tmp_path)
    cloud.start()
    try:
        assert httpx.get(cloud.placement_url, timeout=10).status_code == 200
        assert boot(cloud, "vm")["status"] == "ACTIVE"
    finally:
        cloud.stop()
    # The in-process bus's delivery pool and scatter_gather's pools are not serve's: their
    # threads end on their own once idle (the bus's after its idle timeout, so those are
    # not waited for here). Everything else must be gone.
    left = [t for t in threading.enumerate() if t not in before
            and not t.name.startswith("inproc-")]
    for thread in left:
        thread.join(5)
    assert [t.name for t in left if t.is_alive()] == []
    # Stopping twice is harmless (Ctrl-C during a stop).
    cloud.stop()


def test_bulk_first_pass_writes_what_the_computes_own_pass_would(tmp_path):
    """Seeded hosts skip their first pass; a compute that then runs a real pass finds
    nothing to change: the bulk rows are exactly the tracker's."""
    cloud = make(tmp_path, hosts=4, cells=2)
    cloud.start()
    try:
        services = cloud.started.computes
        assert len(services) == 4
        generations = {}
        with httpx.Client(base_url=cloud.placement_url, headers=ADMIN) as http:
            for rp in http.get("resource_providers").json()["resource_providers"]:
                generations[rp["uuid"]] = rp["generation"]
            for svc in services:
                # Within the refresh interval (here: long) the tracker trusts the bulk pass
                # as its own sync: a pass reads nothing. Then a real pass, reading Placement.
                svc.tracker.verify_every = 10 ** 9
                reads: list[str] = []
                real = svc.tracker.sync.ensure_provider
                svc.tracker.sync.ensure_provider = (  # type: ignore[method-assign]
                    lambda p, real=real, reads=reads: reads.append(p.uuid) or real(p))
                assert svc.update_available_resource().synced == [svc.host]
                assert reads == []
                svc.tracker.verify_every = 0
                report = svc.update_available_resource()   # a real pass now
                assert report.failed == {} and report.synced == [svc.host]
                assert reads   # it did read
            after = {rp["uuid"]: rp["generation"]
                     for rp in http.get("resource_providers").json()["resource_providers"]}
        assert after == generations   # the real passes wrote nothing
    finally:
        cloud.stop()


def test_restart_surveys_every_host_as_unchanged(tmp_path):
    cloud = make(tmp_path, hosts=3, cells=1)
    cloud.start()
    cloud.stop()
    again = make(tmp_path, hosts=3, cells=1)
    calls: list[dict[str, str]] = []
    original = seed.survey

    def spy(engine, hosts):
        verdict = original(engine, hosts)
        calls.append(verdict)
        return verdict

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seed, "survey", spy)
        again.start()
    try:
        assert calls == [{"compute0001": seed.SAME, "compute0002": seed.SAME,
                          "compute0003": seed.SAME}]
    finally:
        again.stop()
