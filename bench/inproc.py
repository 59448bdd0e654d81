"""Per-request cost of the Placement WSGI app in-process, without sockets or a server.

    .venv/bin/python bench/inproc.py                      # SQLite, 1,000 providers
    .venv/bin/python bench/inproc.py --db mysql --profile claim

Loads ``perfload_world(--size)`` by direct SQL, builds the app as
``stratus placement-api`` does, then calls it with hand-made WSGI environs:
``GET /`` (the fixed cost of the stack), candidates with ``limit=50``, and
``PUT /allocations/{new consumer}`` (a claim). Prints the median and mean
microseconds per request for each, and this process's CPU per request (steadier
than wall time on a shared machine; it leaves out the database server's);
``--profile NAME`` runs that one under
cProfile and prints the top functions. No HTTP, so what it shows is the
server's own CPU per request; ``bench/candidates.py`` measures over sockets.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.client import VERSION
from stratus import config as configuration
from stratus.placement.service import build_wsgi, load_candidates_index, make_placement
from tools import loader
from tools.stratus_server import StratusServer
from tools.worlds import perfload_world

HEADERS = {"HTTP_X_AUTH_TOKEN": "admin", "HTTP_OPENSTACK_API_VERSION": f"placement {VERSION}"}


def environ(method: str, path: str, query: str = "", body: bytes = b"") -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
        "SCRIPT_NAME": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8778",
        "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
        "HTTP_HOST": "127.0.0.1:8778", "HTTP_ACCEPT": "application/json", **HEADERS,
    }
    if body:
        env["CONTENT_TYPE"] = "application/json"
        env["CONTENT_LENGTH"] = str(len(body))
    return env


def call(app: Any, env: dict[str, Any]) -> tuple[str, bytes]:
    status: list[str] = []

    def start_response(s: str, headers: list, exc_info: Any = None) -> None:
        status.append(s)

    body = b"".join(app(env, start_response))
    return status[0], body


def requests(world: Any) -> dict[str, Callable[[], dict[str, Any]]]:
    hosts = [p.uuid for p in world.providers if p.name.startswith("cn")]
    counter = iter(range(10**9))

    def claim() -> dict[str, Any]:
        host = hosts[next(counter) % 150]   # ~200 claims fit per host
        body = {"allocations": {host: {"resources": {"VCPU": 1, "MEMORY_MB": 256,
                                                     "DISK_GB": 10}}},
                "project_id": "bench-project", "user_id": "bench-user",
                "consumer_generation": None, "consumer_type": "INSTANCE"}
        return environ("PUT", f"/allocations/{uuid.uuid4()}", body=json.dumps(body).encode())

    return {
        "root": lambda: environ("GET", "/"),
        "classes": lambda: environ("GET", "/resource_classes/VCPU"),
        "flavor": lambda: environ("GET", "/allocation_candidates",
                                  "resources=VCPU:1,DISK_GB:10,MEMORY_MB:256"),
        "limit50": lambda: environ("GET", "/allocation_candidates",
                                   "resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&limit=50"),
        # bench/candidates.py's nested query: 32 candidates at 1,000 providers.
        "nested": lambda: environ(
            "GET", "/allocation_candidates",
            "resources=DISK_GB:10&resources_NUMA=VCPU:2,MEMORY_MB:1024"
            "&resources_PORT=NET_BW_EGR_KILOBIT_PER_SEC:1000,NET_BW_IGR_KILOBIT_PER_SEC:1000"
            "&required_PORT=CUSTOM_PHYSNET_PUBLIC&group_policy=isolate"),
        "claim": claim,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", default="sqlite", help="sqlite, mysql, postgresql")
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--n", type=int, default=500, help="requests per kind")
    p.add_argument("--warmup", type=int, default=20, help="untimed requests per kind first")
    p.add_argument("--profile", help="profile this kind (root, classes, limit50, nested, claim)")
    p.add_argument("--only", help="comma-separated kinds to time")
    p.add_argument("--profile-out", metavar="PATH", help="also save the profile (pstats)")
    p.add_argument("--gap", type=float, default=0.0, metavar="MS",
                   help="sleep this long between timed requests, as a server waits between "
                   "a client's requests (the CPU then runs the next one cold)")
    args = p.parse_args(argv)

    world = perfload_world(args.size)
    server = StratusServer(args.db)
    url = server.create_database()
    try:
        loader.load_world_sql(url, world)
        config = configuration.load([], overrides={("placement_database", "connection"): url})
        placement = make_placement(config, sync=False)
        load_candidates_index(placement)
        app = build_wsgi(placement)
        kinds = requests(world)
        wanted = args.only.split(",") if args.only else list(kinds)
        for name in wanted:
            make = kinds[name]
            for _ in range(args.warmup):
                call(app, make())
            samples = []
            cpu = 0.0
            for _ in range(args.n):
                env = make()
                c0 = time.process_time()
                t0 = time.perf_counter()
                status, _ = call(app, env)
                samples.append(time.perf_counter() - t0)
                cpu += time.process_time() - c0
                if not status.startswith("20"):
                    raise RuntimeError(f"{name}: {status}")
                if args.gap:
                    time.sleep(args.gap / 1000)
            print(f"{name:8} median {statistics.median(samples) * 1e6:8.0f} us   "
                  f"mean {statistics.fmean(samples) * 1e6:8.0f} us   "
                  f"CPU (this process) {cpu / args.n * 1e6:6.0f} us", flush=True)
        if args.profile:
            make = kinds[args.profile]
            envs = [make() for _ in range(args.n)]
            prof = cProfile.Profile()
            prof.enable()
            for env in envs:
                call(app, env)
            prof.disable()
            if args.profile_out:
                prof.dump_stats(args.profile_out)
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out).sort_stats("cumulative")
            stats.print_stats(45)
            stats.sort_stats("tottime").print_stats(30)
            print(out.getvalue())
        placement.engine.dispose()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
