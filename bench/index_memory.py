"""Memory of the allocation-candidates index per provider, measured with tracemalloc.

    .venv/bin/python bench/index_memory.py 100000

Fills a SQLite file with ``perfload_world(N)`` by direct SQL, builds the app,
then measures what building the index allocates (numpy reports its arrays to
tracemalloc), and again after the perfload, flavor and nested queries have
filled the render caches (summaries rendered per provider).
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    from bench.inproc import call, environ
    from stratus import config as configuration
    from stratus.placement.service import build_wsgi, make_placement
    from stratus.storage import engine as db
    from tools import loader
    from tools.stratus_server import StratusServer
    from tools.worlds import BW_EGR, BW_IGR, perfload_world
    world = perfload_world(n)
    srv = StratusServer("sqlite")
    url = srv.create_database()
    try:
        loader.load_world_sql(url, world)
        config = configuration.load([], overrides={("placement_database", "connection"): url})
        placement = make_placement(config, sync=False)
        app = build_wsgi(placement)
        call(app, environ("GET", "/"))  # imports, policy
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        with db.read(placement.engine) as conn, placement.candidates.current(conn):
            pass
        gc.collect()
        built = tracemalloc.get_traced_memory()[0] - base
        agg = world.aggregates[0]
        flavor = "resources=VCPU:1,DISK_GB:10,MEMORY_MB:256"
        nested = ("resources=DISK_GB:10&resources_NUMA=VCPU:2,MEMORY_MB:1024"
                  f"&resources_PORT={BW_EGR}:1000,{BW_IGR}:1000"
                  "&required_PORT=CUSTOM_PHYSNET_PUBLIC&group_policy=isolate")
        for q in (flavor, f"{flavor}&member_of={agg}&required=HW_CPU_X86_AVX2", nested):
            status, body = call(app, environ("GET", "/allocation_candidates", q))
            assert status.startswith("200"), (status, body[:200])
            del body
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] - base
        print(f"{n} providers: index {built / n:.0f} B/provider ({built / 2**20:.1f} MiB); "
              f"after the queries (render caches) {after / n:.0f} B/provider "
              f"({after / 2**20:.1f} MiB)")
    finally:
        srv.stop()
if __name__ == "__main__":
    main()
