"""Repeating jobs of many compute services on a few threads: one queue of due times
shared by a small pool of workers.

A process of ``stratus compute --count`` or ``stratus serve`` runs thousands of hosts;
each host's resource-tracker pass used to sleep in a thread of its own (10,000 hosts,
10,000 threads, every one taking the GIL in turn when its timer fired, and too many for
py-spy to profile). Here a job is an entry in a heap ordered by when it is next due; the
first idle worker takes the earliest job that is due and runs it. ::

    periodic = Periodic(workers=4)
    job = periodic.every(60.0, tracker_pass, first=12.5, name="cmp0001 resource-tracker")
    ...
    periodic.cancel(job)     # no further runs; waits for a run in progress
    periodic.stop()          # every job cancelled, the workers joined

The next run of a job is due ``interval`` seconds after its run *ends*, as in a thread
that sleeps between rounds: a job never runs twice at once, and when the workers fall
behind (passes slower than the hosts need) every pass comes later instead of piling up,
and the pool says so: a WARNING when a run starts more than its interval late (at most
one a minute). A run that raises is logged and the job keeps its schedule.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

LOG = logging.getLogger(__name__)

LATE_WARNING_EVERY = 60.0   # seconds between two warnings that runs start late


@dataclass(eq=False)
class Job:
    interval: float
    work: Callable[[], object]
    name: str
    cancelled: bool = False
    # The worker running it now, if any (cancel waits for it, unless called from it).
    runner: threading.Thread | None = field(default=None, repr=False)


class Periodic:
    def __init__(self, workers: int = 4, name: str = "periodic",
                 clock: Callable[[], float] = time.monotonic) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.name, self._size, self._clock = name, workers, clock
        self._due: list[tuple[float, int, Job]] = []
        self._order = itertools.count()   # ties keep the order jobs were queued in
        self._changed = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._stopped = False
        self._warned_at = -float("inf")

    def every(self, interval: float, work: Callable[[], object], *,
              first: float | None = None, name: str = "") -> Job:
        """Run ``work`` every ``interval`` seconds, the first time after ``first``
        (default: one interval)."""
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        job = Job(float(interval), work, name or getattr(work, "__name__", "job"))
        with self._changed:
            if self._stopped:
                raise RuntimeError(f"{self.name} is stopped")
            self._queue(job, self._clock() + (interval if first is None else first))
            if not self._workers:
                self._start_workers()
        return job

    def cancel(self, job: Job, timeout: float = 10.0) -> None:
        """No further runs of ``job``; returns once a run in progress has ended (or after
        ``timeout``), unless called from that run itself."""
        deadline = time.monotonic() + timeout
        with self._changed:
            job.cancelled = True   # its heap entry is dropped when it comes up
            while job.runner is not None and job.runner is not threading.current_thread():
                left = deadline - time.monotonic()
                if left <= 0:
                    LOG.warning("%s: %s still running after %.0f s", self.name, job.name,
                                timeout)
                    return
                self._changed.wait(left)

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel every job and join the workers (a run in progress is waited for)."""
        with self._changed:
            self._stopped = True
            for _, _, job in self._due:
                job.cancelled = True
            self._due.clear()
            self._changed.notify_all()
            workers, self._workers = self._workers, []
        deadline = time.monotonic() + timeout
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))

    def pending(self) -> int:
        """Jobs waiting for their next run (not cancelled)."""
        with self._changed:
            return sum(1 for _, _, job in self._due if not job.cancelled)

    def _queue(self, job: Job, due: float) -> None:
        heapq.heappush(self._due, (due, next(self._order), job))
        if self._due[0][2] is job:   # sooner than what the workers wait for
            self._changed.notify()

    def _start_workers(self) -> None:
        for number in range(1, self._size + 1):
            worker = threading.Thread(target=self._work, name=f"{self.name}-{number}",
                                      daemon=True)
            self._workers.append(worker)
            worker.start()

    def _next(self) -> Job | None:
        """The earliest due job, marked as running by this thread; None once stopped."""
        with self._changed:
            while not self._stopped:
                if not self._due:
                    self._changed.wait()
                    continue
                due, _, job = self._due[0]
                if job.cancelled:
                    heapq.heappop(self._due)
                    continue
                now = self._clock()
                if due > now:
                    self._changed.wait(due - now)
                    continue
                heapq.heappop(self._due)
                job.runner = threading.current_thread()
                self._say_if_late(job, now - due, now)
                if self._due:   # another worker may take the next one now
                    self._changed.notify()
                return job
            return None

    def _say_if_late(self, job: Job, late: float, now: float) -> None:
        if late > job.interval and now - self._warned_at >= LATE_WARNING_EVERY:
            self._warned_at = now
            LOG.warning("%s: %s starts %.0f s late (its interval is %.0f s): %d worker(s) "
                        "do not keep up with %d jobs; give the process fewer hosts or more "
                        "CPU", self.name, job.name, late, job.interval, self._size,
                        self.pending() + 1)   # the waiting ones and this one

    def _work(self) -> None:
        while (job := self._next()) is not None:
            try:
                job.work()
            except Exception:  # one failed round must not end the job or the worker
                LOG.exception("%s failed", job.name)
            with self._changed:
                job.runner = None
                if not job.cancelled and not self._stopped:
                    self._queue(job, self._clock() + job.interval)
                self._changed.notify_all()   # a cancel may be waiting for this run
