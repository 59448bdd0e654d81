"""Load a world into any Placement-compatible endpoint through its HTTP API.

    python tools/loader.py URL --seed 7            # a differential world
    python tools/loader.py URL --perfload 10000    # a benchmark world

Trees load concurrently (one tree per task, parents before children); then
consumers' allocations. The same client code loads Stratus and the reference,
so both get exactly the same requests. A much faster path writes the rows
directly, into Stratus's database (``load_world_sql``) or the reference's
(``load_world_peer_sql``): the benchmark uses it for the largest worlds, and
says so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.worlds import Consumer, Provider, World, generate_world, perfload_world

LOAD_VERSION = "1.39"


class LoadError(RuntimeError):
    pass


class Client:
    """Admin client at a fixed microversion; raises LoadError on unexpected answers."""

    def __init__(self, base_url: str, version: str = LOAD_VERSION, timeout: float = 600.0):
        self.http = httpx.Client(base_url=base_url, timeout=timeout, headers={
            "X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}",
            "Accept": "application/json"})

    def call(self, method: str, path: str, expect: Iterable[int], body: Any = None,
             retries: int = 5) -> httpx.Response:
        for attempt in range(retries + 1):
            resp = self.http.request(method, path, json=body)
            if resp.status_code in expect:
                return resp
            # A concurrent writer on a shared provider moved its generation: try again.
            if resp.status_code == 409 and "concurrent_update" in resp.text and attempt < retries:
                time.sleep(0.01 * (attempt + 1))
                continue
            raise LoadError(f"{method} {path} -> {resp.status_code}: {resp.text[:500]}")
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()


class _Progress:
    def __init__(self, label: str, total: int, out: Callable[[str], None] | None) -> None:
        self.label, self.total, self.out = label, total, out
        self.done = 0
        self.lock = threading.Lock()
        self.started = self.last = time.monotonic()

    def add(self, n: int) -> None:
        with self.lock:
            self.done += n
            now = time.monotonic()
            if self.out and (now - self.last > 2.0 or self.done == self.total):
                self.last = now
                rate = self.done / max(now - self.started, 1e-9)
                self.out(f"  {self.label}: {self.done}/{self.total} ({rate:.0f}/s)")


def _load_tree(client: Client, tree: list[Provider]) -> int:
    for p in tree:
        body: dict[str, Any] = {"name": p.name, "uuid": p.uuid}
        if p.parent:
            body["parent_provider_uuid"] = p.parent
        gen = client.call("POST", "/resource_providers", (200,), body).json()["generation"]
        if p.inventories:
            gen = client.call("PUT", f"/resource_providers/{p.uuid}/inventories", (200,), {
                "resource_provider_generation": gen, "inventories": p.inventories,
            }).json()["resource_provider_generation"]
        if p.traits:
            gen = client.call("PUT", f"/resource_providers/{p.uuid}/traits", (200,), {
                "resource_provider_generation": gen, "traits": sorted(p.traits),
            }).json()["resource_provider_generation"]
        if p.aggregates:
            client.call("PUT", f"/resource_providers/{p.uuid}/aggregates", (200,), {
                "resource_provider_generation": gen, "aggregates": sorted(p.aggregates)})
    return len(tree)


def _allocate(client: Client, c: Consumer) -> int:
    client.call("PUT", f"/allocations/{c.uuid}", (204,), {
        "allocations": {rp: {"resources": res} for rp, res in c.allocations.items()},
        "project_id": c.project_id, "user_id": c.user_id,
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    return 1


def trees(world: World) -> list[list[Provider]]:
    """Providers grouped by tree, each list parents-first."""
    root_of: dict[str, str] = {}
    by_root: dict[str, list[Provider]] = defaultdict(list)
    for p in world.providers:
        root_of[p.uuid] = root_of[p.parent] if p.parent else p.uuid
        by_root[root_of[p.uuid]].append(p)
    return list(by_root.values())


def _run(base_url: str, threads: int, items: list, work: Callable[[Client, Any], int],
         progress: _Progress) -> None:
    local = threading.local()
    clients: list[Client] = []

    def task(item: Any) -> None:
        if not hasattr(local, "client"):
            local.client = Client(base_url)
            clients.append(local.client)
        progress.add(work(local.client, item))

    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    try:
        for future in [pool.submit(task, item) for item in items]:
            future.result()
    finally:
        # On the first failure (or Ctrl-C) drop the queued work instead of finishing it.
        pool.shutdown(wait=True, cancel_futures=True)
        for c in clients:
            c.close()


def _create_names(base_url: str, world: World) -> None:
    """The world's custom resource classes and traits, through the API."""
    client = Client(base_url)
    try:
        for rc in world.custom_classes:
            client.call("PUT", f"/resource_classes/{rc}", (201, 204))
        for trait in world.custom_traits:
            client.call("PUT", f"/traits/{trait}", (201, 204))
    finally:
        client.close()


def load_world(base_url: str, world: World, threads: int = 8,
               out: Callable[[str], None] | None = None) -> dict[str, float]:
    """Create the world's classes, traits, providers and allocations; return timings."""
    started = time.monotonic()
    _create_names(base_url, world)
    _run(base_url, threads, trees(world), _load_tree,
         _Progress("providers", len(world.providers), out))
    providers_done = time.monotonic()
    if world.consumers:
        _run(base_url, threads, world.consumers, _allocate,
             _Progress("consumers", len(world.consumers), out))
    ended = time.monotonic()
    return {"seconds": ended - started, "provider_seconds": providers_done - started,
            "providers_per_second": len(world.providers) / max(providers_done - started, 1e-9)}


def wipe(base_url: str, threads: int = 4) -> None:
    """Delete every allocation and provider at the endpoint (leaves first).

    Works from what the server reports, not from a world, so it also cleans up
    after a load that failed halfway. Custom classes and traits stay.
    """
    client = Client(base_url)
    try:
        rps = client.call("GET", "/resource_providers", (200,)).json()["resource_providers"]
        consumers: set[str] = set()
        for rp in rps:
            allocs = client.call("GET", f"/resource_providers/{rp['uuid']}/allocations",
                                 (200,)).json()["allocations"]
            consumers.update(allocs)
    finally:
        client.close()

    def delete_consumer(c: Client, consumer: str) -> int:
        c.call("DELETE", f"/allocations/{consumer}", (204, 404))
        return 1

    _run(base_url, threads, sorted(consumers), delete_consumer, _Progress("", 0, None))
    parent = {rp["uuid"]: rp["parent_provider_uuid"] for rp in rps}

    def depth(u: str) -> int:
        return 0 if parent.get(u) is None else 1 + depth(parent[u])

    by_depth: dict[int, list[str]] = defaultdict(list)
    for u in parent:
        by_depth[depth(u)].append(u)

    def delete_provider(c: Client, u: str) -> int:
        c.call("DELETE", f"/resource_providers/{u}", (204, 404))
        return 1

    for level in sorted(by_depth, reverse=True):
        _run(base_url, threads, by_depth[level], delete_provider, _Progress("", 0, None))
    client = Client(base_url)
    try:
        left = client.call("GET", "/resource_providers", (200,)).json()["resource_providers"]
    finally:
        client.close()
    if left:
        raise LoadError(f"wipe left {len(left)} providers behind at {base_url}")


@dataclass
class _Rows:
    """A world's provider rows, in the column names Stratus and Placement share."""

    providers: list[dict[str, Any]]
    inventories: list[dict[str, Any]]
    traits: list[dict[str, Any]]
    aggregates: list[dict[str, Any]]            # placement_aggregates
    provider_aggregates: list[dict[str, Any]]


def _world_rows(world: World, rc_ids: dict[str, int], trait_ids: dict[str, int],
                first_provider_id: int, aggregate_ids: dict[str, int], first_aggregate_id: int,
                stamp: Any) -> _Rows:
    """Rows for the world's providers. ``aggregate_ids``: aggregates the database has
    already (a provider deleted leaves its aggregates behind); the others are new."""
    ids = {p.uuid: first_provider_id + i for i, p in enumerate(world.providers)}
    new = [a for a in world.aggregates if a not in aggregate_ids]
    agg_ids = {**aggregate_ids, **{a: first_aggregate_id + i for i, a in enumerate(new)}}
    rows = _Rows([], [], [], [{"id": agg_ids[a], "uuid": a} for a in new], [])
    root: dict[str, int] = {}
    for p in world.providers:
        root[p.uuid] = root[p.parent] if p.parent else ids[p.uuid]
        rows.providers.append({
            "id": ids[p.uuid], "uuid": p.uuid, "name": p.name, "generation": 1,
            "root_provider_id": root[p.uuid],
            "parent_provider_id": ids[p.parent] if p.parent else None, "created_at": stamp})
        rows.inventories += [{"resource_provider_id": ids[p.uuid], "resource_class_id": rc_ids[rc],
                              "created_at": stamp, **inv} for rc, inv in p.inventories.items()]
        rows.traits += [{"resource_provider_id": ids[p.uuid], "trait_id": trait_ids[t],
                         "created_at": stamp} for t in p.traits]
        rows.provider_aggregates += [{"resource_provider_id": ids[p.uuid],
                                      "aggregate_id": agg_ids[a], "created_at": stamp}
                                     for a in p.aggregates]
    return rows


def _insert_rows(conn: Any, tables: Mapping[str, Any], rows: _Rows) -> None:
    """Insert ``rows`` into ``tables`` (by Placement's table names), 5,000 at a time."""
    import sqlalchemy as sa

    for name, batch in (("placement_aggregates", rows.aggregates),
                        ("resource_providers", rows.providers),
                        ("inventories", rows.inventories),
                        ("resource_provider_traits", rows.traits),
                        ("resource_provider_aggregates", rows.provider_aggregates)):
        for i in range(0, len(batch), 5000):
            conn.execute(sa.insert(tables[name]), batch[i:i + 5000])
    if conn.dialect.name == "postgresql":
        for name in ("resource_providers", "placement_aggregates"):
            conn.exec_driver_sql(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                                 f"(SELECT max(id) FROM {name}))")


def _rows_for(conn: Any, world: World, tables: Mapping[str, Any], stamp: Any) -> _Rows:
    """The world's rows, with the ids this database has or will give them."""
    import sqlalchemy as sa

    def ids(name: str, key: str) -> dict[str, int]:
        table = tables[name]
        return dict(conn.execute(sa.select(table.c[key], table.c.id)).all())

    def next_id(name: str) -> int:
        return (conn.execute(sa.select(sa.func.max(tables[name].c.id))).scalar() or 0) + 1

    return _world_rows(world, ids("resource_classes", "name"), ids("traits", "name"),
                       next_id("resource_providers"), ids("placement_aggregates", "uuid"),
                       next_id("placement_aggregates"), stamp)


def load_world_sql(db_url: str, world: World) -> float:
    """Stratus: write the world's rows straight into a (migrated here) Stratus database.

    Orders of magnitude faster than HTTP for 100,000 providers. Records one global
    change so a running server's candidates index reloads everything.
    """
    import sqlalchemy as sa

    from stratus.placement import db as placement_db
    from stratus.placement import schema as s
    from stratus.placement.store.common import now, record_change
    from stratus.storage import engine as db

    if world.consumers:
        raise LoadError("load_world_sql does not load consumers; use load_world")
    started = time.monotonic()
    engine = db.create_engine(db_url)
    placement_db.sync(engine)
    stamp = now()
    with db.write(engine) as conn:
        for name in world.custom_classes:
            if conn.execute(sa.select(s.resource_classes.c.id)
                            .where(s.resource_classes.c.name == name)).first() is None:
                conn.execute(sa.insert(s.resource_classes).values(name=name, created_at=stamp))
        for name in world.custom_traits:
            if conn.execute(sa.select(s.traits.c.id).where(s.traits.c.name == name)).first() \
                    is None:
                conn.execute(sa.insert(s.traits).values(name=name, created_at=stamp))
        tables = {t.name: t for t in s.metadata.sorted_tables}
        _insert_rows(conn, tables, _rows_for(conn, world, tables, stamp))
        record_change(conn, [None])
    engine.dispose()
    return time.monotonic() - started


def load_world_peer_sql(base_url: str, db_url: str, world: World) -> float:
    """The reference: write the world's rows straight into its (running) database.

    Its custom classes and traits go through its API first, so that its own
    caches and syncs know them; providers, inventories, traits and aggregates are
    then inserted into its tables, read from the database itself (they share
    Placement's names and columns, but not all of Stratus's). It keeps nothing of
    providers in memory between requests, so the next request sees them all.
    """
    import sqlalchemy as sa

    if world.consumers:
        raise LoadError("load_world_peer_sql does not load consumers; use load_world")
    started = time.monotonic()
    _create_names(base_url, world)
    engine = sa.create_engine(db_url)
    try:
        names = ["resource_classes", "traits", "resource_providers", "inventories",
                 "resource_provider_traits", "placement_aggregates",
                 "resource_provider_aggregates"]
        metadata = sa.MetaData()
        metadata.reflect(engine, only=names)
        with engine.begin() as conn:
            stamp = dt.datetime.now(dt.UTC).replace(tzinfo=None)
            rows = _rows_for(conn, world, metadata.tables, stamp)
            _insert_rows(conn, metadata.tables, rows)
    finally:
        engine.dispose()
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="Placement endpoint, e.g. http://127.0.0.1:8778")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--seed", help="load generate_world(SEED)")
    what.add_argument("--perfload", type=int, metavar="N", help="load perfload_world(N)")
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)
    world = perfload_world(args.perfload) if args.perfload else generate_world(args.seed)
    print(world.summary())
    stats = load_world(args.url, world, args.threads, out=print)
    print(f"loaded in {stats['seconds']:.1f}s ({stats['providers_per_second']:.0f} providers/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
