"""Claim throughput: ``PUT /allocations/{consumer}`` sequentially and from many clients.

Each claim is a new consumer taking a small flavor (VCPU:1, MEMORY_MB:256,
DISK_GB:10) on one host, as a scheduler does after choosing a candidate. The
concurrent run aims every client at a small hot set of hosts so that writers
collide on provider generations; servers may retry such conflicts internally,
and whatever they do not absorb comes back as 409, which is counted.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 10}
VERSION = "1.39"


@dataclass
class ClaimResult:
    claims: int
    seconds: float
    statuses: Counter[int] = field(default_factory=Counter)
    conflict_codes: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.claims / self.seconds if self.seconds else 0.0

    @property
    def conflict_rate(self) -> float:
        return self.statuses[409] / self.claims if self.claims else 0.0

    @property
    def other_failures(self) -> int:
        return sum(n for s, n in self.statuses.items() if s not in (204, 409))


def _client(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=120, headers={
        "X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {VERSION}"})


def _claim(client: httpx.Client, host: str, result: ClaimResult, lock: threading.Lock) -> None:
    body = {"allocations": {host: {"resources": FLAVOR}}, "project_id": "bench-project",
            "user_id": "bench-user", "consumer_generation": None, "consumer_type": "INSTANCE"}
    started = time.perf_counter()
    resp = client.put(f"/allocations/{uuid.uuid4()}", json=body)
    elapsed = time.perf_counter() - started
    with lock:
        result.statuses[resp.status_code] += 1
        result.latencies.append(elapsed)
        if resp.status_code == 409:
            try:
                code = resp.json()["errors"][0].get("code", "?")
            except (ValueError, KeyError, IndexError):
                code = "?"
            result.conflict_codes[code] += 1


def run_claims(base_url: str, hosts: list[str], claims: int, clients: int,
               seed: int = 0) -> ClaimResult:
    """``claims`` claims spread over ``hosts`` by ``clients`` concurrent clients."""
    rng = random.Random(seed)
    targets = [rng.choice(hosts) for _ in range(claims)]
    result = ClaimResult(claims=claims, seconds=0.0)
    lock = threading.Lock()
    local = threading.local()
    made: list[httpx.Client] = []

    def work(host: str) -> None:
        if not hasattr(local, "client"):
            local.client = _client(base_url)
            with lock:
                made.append(local.client)
        _claim(local.client, host, result, lock)

    started = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=clients)
    try:
        for f in [pool.submit(work, h) for h in targets]:
            f.result()
    finally:
        result.seconds = time.perf_counter() - started
        pool.shutdown(wait=True, cancel_futures=True)
        for c in made:
            c.close()
    return result
