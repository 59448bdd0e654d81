"""Claim throughput: ``PUT /allocations/{consumer}`` sequentially and from many clients.

Each claim is a new consumer taking a small flavor (VCPU:1, MEMORY_MB:256,
DISK_GB:10) on one host, as a scheduler does after choosing a candidate. The
concurrent run aims every client at a small hot set of hosts so that writers
collide on provider generations; servers may retry such conflicts internally,
and whatever they do not absorb comes back as 409, which is counted.

Every client is a process of its own with one keep-alive connection
(``bench.client``), as schedulers are: 16 threads of one Python process would
share one GIL, and on a 2-core machine their client-side work would queue
behind itself. Request bodies are built before the clock starts; the clock runs
from the moment all clients are released until the last answer.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.client import Client

FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 10}


@dataclass
class ClaimResult:
    claims: int
    seconds: float
    statuses: Counter[int] = field(default_factory=Counter)
    conflict_codes: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    client_cpu: float = 0.0   # seconds of CPU the clients spent in the timed window

    @property
    def per_second(self) -> float:
        return self.claims / self.seconds if self.seconds else 0.0

    @property
    def conflict_rate(self) -> float:
        return self.statuses[409] / self.claims if self.claims else 0.0

    @property
    def other_failures(self) -> int:
        return sum(n for s, n in self.statuses.items() if s not in (204, 409))


def _body(host: str) -> bytes:
    return json.dumps({
        "allocations": {host: {"resources": FLAVOR}}, "project_id": "bench-project",
        "user_id": "bench-user", "consumer_generation": None, "consumer_type": "INSTANCE",
    }).encode()


def _client_process(base_url: str, targets: list[str], ready: Any, go: Any,
                    out: Any) -> None:
    """One client: claim each target in turn; report statuses, 409 codes, latencies, the
    start and end of its run, and its CPU time."""
    requests = [(f"/allocations/{uuid.uuid4()}", _body(host)) for host in targets]
    statuses: Counter[int] = Counter()
    codes: Counter[str] = Counter()
    latencies: list[float] = []
    with Client(base_url, timeout=120) as client:
        client.get("/")   # connect before the clock starts
        ready.release()
        go.wait()
        cpu = time.process_time()
        started = time.monotonic()
        for path, body in requests:
            t0 = time.perf_counter()
            status, answer = client.request("PUT", path, body)
            latencies.append(time.perf_counter() - t0)
            statuses[status] += 1
            if status == 409:
                try:
                    codes[json.loads(answer)["errors"][0].get("code", "?")] += 1
                except (ValueError, KeyError, IndexError):
                    codes["?"] += 1
        finished = time.monotonic()
        cpu = time.process_time() - cpu
    out.put((dict(statuses), dict(codes), latencies, started, finished, cpu))


def run_claims(base_url: str, hosts: list[str], claims: int, clients: int,
               seed: int = 0) -> ClaimResult:
    """``claims`` claims spread over ``hosts`` by ``clients`` concurrent client processes."""
    rng = random.Random(seed)
    targets = [rng.choice(hosts) for _ in range(claims)]
    shares = [targets[i::clients] for i in range(clients)]
    ctx = multiprocessing.get_context("spawn")   # no fork of a process with threads
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_client_process, args=(base_url, share, ready, go, out),
                         daemon=True) for share in shares if share]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            if not ready.acquire(timeout=120):
                raise RuntimeError("a claim client did not start")
        go.set()
        reports = [out.get(timeout=1800) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    result = ClaimResult(claims=claims, seconds=0.0)
    for statuses, codes, latencies, _, _, cpu in reports:
        result.statuses.update(statuses)
        result.conflict_codes.update(codes)
        result.latencies.extend(latencies)
        result.client_cpu += cpu
    result.seconds = max(r[4] for r in reports) - min(r[3] for r in reports)
    return result
