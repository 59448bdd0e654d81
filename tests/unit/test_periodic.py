"""Periodic: many hosts' repeating passes on a few threads."""

from __future__ import annotations

import threading
import time

import pytest

from stratus.compute.periodic import Periodic
from tests.waiting import eventually


@pytest.fixture
def periodic():
    p = Periodic(workers=2, name="test-periodic")
    yield p
    p.stop()


def test_a_thousand_jobs_run_on_the_pools_threads_only(periodic):
    runs: dict[int, int] = {}
    lock = threading.Lock()

    def job(n):
        def run():
            with lock:
                runs[n] = runs.get(n, 0) + 1
        return run

    before = {t.name for t in threading.enumerate()}
    for n in range(1000):
        periodic.every(0.01, job(n), first=0.0)
    assert eventually(lambda: len(runs) == 1000 and min(runs.values()) >= 2)
    started = {t.name for t in threading.enumerate()} - before
    assert started == {"test-periodic-1", "test-periodic-2"}


def test_jobs_come_due_in_order_of_their_first_run():
    periodic = Periodic(workers=1, name="order")
    order: list[str] = []
    try:
        for name, first in (("late", 0.06), ("early", 0.0), ("middle", 0.03)):
            periodic.every(3600, lambda n=name: order.append(n), first=first)
        assert eventually(lambda: len(order) == 3)
        assert order == ["early", "middle", "late"]
    finally:
        periodic.stop()


def test_a_job_never_runs_twice_at_once_and_waits_an_interval_after_each_run(periodic):
    inside, overlaps, ends, starts = [0], [0], [], []
    lock = threading.Lock()

    def slow():
        with lock:
            inside[0] += 1
            overlaps[0] = max(overlaps[0], inside[0])
            starts.append(time.monotonic())
        time.sleep(0.03)
        with lock:
            inside[0] -= 1
            ends.append(time.monotonic())

    periodic.every(0.01, slow, first=0.0)   # an interval shorter than a run
    assert eventually(lambda: len(ends) >= 3)
    assert overlaps[0] == 1
    # Each run starts at least an interval after the previous one ended.
    assert all(start >= end + 0.01 for start, end in zip(starts[1:], ends, strict=False))


def test_a_failing_run_is_logged_and_the_job_keeps_its_schedule(periodic, caplog):
    calls = [0]

    def flaky():
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("Placement away")

    periodic.every(0.005, flaky, first=0.0, name="cmp1 resource-tracker pass")
    assert eventually(lambda: calls[0] >= 3)
    assert "cmp1 resource-tracker pass failed" in caplog.text


def test_cancel_waits_for_a_run_in_progress_and_stops_the_next(periodic):
    entered, release, runs = threading.Event(), threading.Event(), [0]

    def run():
        runs[0] += 1
        entered.set()
        release.wait(5)

    job = periodic.every(0.001, run, first=0.0)
    assert entered.wait(5)
    cancelled = threading.Event()
    canceller = threading.Thread(target=lambda: (periodic.cancel(job), cancelled.set()))
    canceller.start()
    assert not cancelled.wait(0.05)   # still inside the run
    release.set()
    assert cancelled.wait(5)
    canceller.join()
    time.sleep(0.02)
    assert runs[0] == 1
    assert periodic.pending() == 0


def test_a_job_can_cancel_itself(periodic):
    runs = [0]
    holder = {}

    def run():
        runs[0] += 1
        periodic.cancel(holder["job"])   # would wait for itself forever

    holder["job"] = periodic.every(0.001, run, first=0.0)
    assert eventually(lambda: runs[0] == 1)
    time.sleep(0.02)
    assert runs[0] == 1


def test_stop_joins_the_workers_and_refuses_new_jobs():
    periodic = Periodic(workers=3, name="stopping")
    periodic.every(3600, lambda: None)
    assert len([t for t in threading.enumerate() if t.name.startswith("stopping-")]) == 3
    periodic.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("stopping-")]
    with pytest.raises(RuntimeError, match="stopped"):
        periodic.every(1, lambda: None)


@pytest.mark.parametrize("kwargs, message", [({"workers": 0}, "workers")])
def test_a_pool_needs_a_worker(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Periodic(**kwargs)


def test_an_interval_must_be_positive(periodic):
    with pytest.raises(ValueError, match="interval must be positive"):
        periodic.every(0, lambda: None)


def test_runs_that_start_later_than_their_interval_are_reported_once_a_minute(caplog):
    """One worker, a job that takes longer than the others' interval: they start late,
    and the operator is told once (not once per run)."""
    periodic = Periodic(workers=1, name="busy")
    runs = [0]

    def quick():
        runs[0] += 1

    try:
        periodic.every(3600, lambda: time.sleep(0.1), first=0.0, name="slow pass")
        periodic.every(0.01, quick, first=0.0, name="cmp1 pass")
        assert eventually(lambda: runs[0] >= 5)
    finally:
        periodic.stop()
    late = [r.getMessage() for r in caplog.records if "late" in r.getMessage()]
    assert len(late) == 1
    assert "busy: cmp1 pass starts" in late[0]
    assert "1 worker(s) do not keep up with 2 jobs" in late[0]


def test_runs_on_time_are_not_reported(periodic, caplog):
    runs = [0]
    periodic.every(0.3, lambda: runs.__setitem__(0, runs[0] + 1), first=0.0)
    assert eventually(lambda: runs[0] >= 3)
    assert not [r for r in caplog.records if "late" in r.getMessage()]
