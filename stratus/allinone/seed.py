"""The first resource-tracker pass of many hosts at once (``stratus serve`` only).

A compute service's first pass costs about eight Placement requests per host
(create the provider, read and write inventories, traits, aggregates, list the
tree). For a thousand simulated hosts in one process that is most of the
start-up time, so ``stratus serve`` does the same work in bulk first:

1. :func:`prepare_cell`: in one transaction per cell, every host's service record
   (what the service's registration writes), the compute_nodes rows of every host
   that has none yet (what its pass would write), each host's disabled flag, and
   which hosts the cell books servers on: only those look for servers to re-adopt
   when they start (a restart); the others start without a call to the conductor.
2. :func:`survey`: one read of Placement's tables says, per host, whether its
   providers are *missing* (a new host), already *same* as the driver
   describes them (a restart), or *different* (anything else).
3. :func:`create_missing`: the providers of new hosts, with their inventories,
   traits (``COMPUTE_STATUS_DISABLED`` on a disabled root) and aggregates,
   inserted in a few transactions, each logged with ``record_change`` like
   any Placement write so the candidates index sees them.

Hosts that came out *missing* or *same* skip their first pass (Placement
already matches the driver); *different* hosts run it normally over HTTP, so
every repair (and every error) goes through the compute's own code. Later
passes are the compute's, unchanged. This writes Placement's tables directly,
so it runs on SQLite only, while ``stratus serve`` is the only writer and before
the Placement API listens; elsewhere every host simply runs its own first pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import os_traits
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stratus.cells import schema as cs
from stratus.cells import services
from stratus.compute import cell_records
from stratus.compute.drivers import Driver
from stratus.compute.provider_tree import Provider, ProviderTree
from stratus.compute.records import LEFT_BEHIND
from stratus.compute.rpcapi import BINARY
from stratus.placement import schema as ps
from stratus.placement.model import Inventory
from stratus.placement.store.common import now, record_change
from stratus.storage import engine as db

DISABLED = os_traits.COMPUTE_STATUS_DISABLED
MISSING, SAME, DIFFERENT = "missing", "same", "different"
CHUNK = 500           # uuids per IN (...) clause
HOSTS_PER_WRITE = 250  # hosts per Placement transaction


@dataclass(frozen=True)
class HostTrees:
    host: str
    trees: tuple[ProviderTree, ...]
    disabled: bool

    def providers(self) -> Iterable[Provider]:
        for tree in self.trees:
            yield from tree


# ---- the cell side -------------------------------------------------------------------


@dataclass(frozen=True)
class CellHosts:
    """What :func:`prepare_cell` found and wrote for one cell's hosts."""
    service_ids: dict[str, int]    # host -> its compute service record's id
    disabled: dict[str, bool]      # host -> its service is disabled
    to_adopt: set[str]             # hosts the cell books instances or resize copies on
    fresh: set[str]                # hosts whose every compute_nodes row was written now


def prepare_cell(engine: Engine, drivers: Sequence[Driver], version: int) -> CellHosts:
    """Every host's service record (created, or the version of a restart, as the
    service's own registration would), compute_nodes rows for nodes that have none,
    and which hosts have servers to re-adopt; in one transaction."""
    stamp = services.utcnow()
    with db.write(engine) as conn:
        known = {s.host: s for s in services.list_all(conn, binary=BINARY)}
        nodes = set(conn.execute(sa.select(cs.compute_nodes.c.uuid)).scalars())
        hosts = [d.host for d in drivers]
        for part in _chunks(sorted(set(hosts) & known.keys())):
            conn.execute(sa.update(cs.services).where(
                cs.services.c.binary == BINARY, cs.services.c.host.in_(part)).values(
                version=version, last_seen_up=stamp, updated_at=stamp))
        fresh: set[str] = set()
        for driver in drivers:
            record = known.get(driver.host)
            if record is None:
                record = services.register(conn, driver.host, BINARY, version, now=stamp)
                known[driver.host] = record
            node_names = driver.get_available_nodes()
            trees = [driver.provider_tree(node) for node in node_names]
            if trees and not any(t.root.uuid in nodes for t in trees):
                fresh.add(driver.host)
            for node, tree in zip(node_names, trees, strict=True):
                if tree.root.uuid in nodes:
                    continue
                cell_records.save_compute_node(
                    conn, service_id=record.id, host=driver.host, node=node,
                    hypervisor_type=driver.hypervisor, tree=tree,
                    usage=cell_records.NodeUsage(0, 0, 0, 0), now=stamp)
        busy = _hosts_with_servers(conn)
    return CellHosts({h: known[h].id for h in hosts}, {h: known[h].disabled for h in hosts},
                     busy & set(hosts), fresh - busy)


def _hosts_with_servers(conn: Connection) -> set[str]:
    """Hosts with anything :func:`stratus.compute.recovery.recover_instances` would adopt
    (a superset: any live instance, any migration from the host); the others skip it."""
    t, m = cs.instances, cs.migrations
    found = set(conn.execute(sa.select(t.c.host).distinct().where(
        t.c.host.is_not(None), t.c.deleted_at.is_(None))).scalars())
    found |= set(conn.execute(sa.select(m.c.source_compute).distinct().where(
        m.c.source_compute.is_not(None), m.c.status.in_(LEFT_BEHIND))).scalars())
    return found


# ---- the Placement side --------------------------------------------------------------


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), CHUNK):
        yield items[i:i + CHUNK]


def _inventory_fields(fields: Mapping[str, object]) -> dict[str, object]:
    return Inventory.from_fields("X", fields).as_dict()


def _same_inventory(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    x, y = _inventory_fields(a), _inventory_fields(b)
    return all(math.isclose(float(x[k]), float(y[k]), rel_tol=1e-9)  # type: ignore[arg-type]
               if k == "allocation_ratio" else x[k] == y[k] for k in x)


@dataclass
class _Found:
    id: int
    parent: str | None
    root_id: int
    inventories: dict[str, dict[str, object]]
    traits: set[str]
    aggregates: set[str]


def _read(conn: Connection, uuids: Sequence[str]) -> tuple[dict[str, _Found], dict[int, int]]:
    """Placement's copy of these providers, and how many providers each of their trees has."""
    rp, parent = ps.resource_providers, ps.resource_providers.alias("parent")
    found: dict[str, _Found] = {}
    for part in _chunks(uuids):
        rows = conn.execute(
            sa.select(rp.c.id, rp.c.uuid, rp.c.root_provider_id, parent.c.uuid.label("p"))
            .outerjoin(parent, parent.c.id == rp.c.parent_provider_id)
            .where(rp.c.uuid.in_(part)))
        for row in rows:
            found[row.uuid] = _Found(row.id, row.p, row.root_provider_id, {}, set(), set())
    by_id = {f.id: f for f in found.values()}
    ids = sorted(by_id)
    inv, rc = ps.inventories, ps.resource_classes
    rpt, tr = ps.resource_provider_traits, ps.traits
    rpa, agg = ps.resource_provider_aggregates, ps.placement_aggregates
    sizes: dict[int, int] = {}
    for i in range(0, len(ids), CHUNK):
        part_ids = ids[i:i + CHUNK]
        for row in conn.execute(sa.select(inv, rc.c.name.label("rc"))
                                .join(rc, rc.c.id == inv.c.resource_class_id)
                                .where(inv.c.resource_provider_id.in_(part_ids))):
            by_id[row.resource_provider_id].inventories[row.rc] = {
                k: getattr(row, k) for k in ("total", "reserved", "min_unit", "max_unit",
                                             "step_size", "allocation_ratio")}
        for pid, name in conn.execute(sa.select(rpt.c.resource_provider_id, tr.c.name)
                                      .join(tr, tr.c.id == rpt.c.trait_id)
                                      .where(rpt.c.resource_provider_id.in_(part_ids))):
            by_id[pid].traits.add(name)
        for pid, uuid in conn.execute(sa.select(rpa.c.resource_provider_id, agg.c.uuid)
                                      .join(agg, agg.c.id == rpa.c.aggregate_id)
                                      .where(rpa.c.resource_provider_id.in_(part_ids))):
            by_id[pid].aggregates.add(uuid)
    roots = sorted({f.root_id for f in found.values()})
    for i in range(0, len(roots), CHUNK):
        sizes.update(conn.execute(
            sa.select(rp.c.root_provider_id, sa.func.count())
            .where(rp.c.root_provider_id.in_(roots[i:i + CHUNK]))
            .group_by(rp.c.root_provider_id)).tuples().all())
    return found, sizes


def generations(engine: Engine, uuids: Sequence[str]) -> dict[str, int]:
    """Provider uuid -> its generation now (for the trackers' trust in the bulk pass)."""
    rp = ps.resource_providers
    found: dict[str, int] = {}
    with db.read(engine) as conn:
        for part in _chunks(uuids):
            found.update(conn.execute(sa.select(rp.c.uuid, rp.c.generation)
                                      .where(rp.c.uuid.in_(part))).tuples().all())
    return found


def _wanted_traits(provider: Provider, disabled: bool) -> set[str]:
    is_root = provider.parent_uuid is None
    return set(provider.traits) | ({DISABLED} if disabled and is_root else set())


def _matches(provider: Provider, found: _Found, disabled: bool) -> bool:
    """Would the compute's first pass leave this provider as it is?"""
    if found.parent != provider.parent_uuid:
        return False
    wanted = provider.inventory_body()
    if set(wanted) != set(found.inventories) or not all(
            _same_inventory(wanted[rc], found.inventories[rc]) for rc in wanted):
        return False
    traits = _wanted_traits(provider, disabled)
    if not traits <= found.traits:
        return False
    if provider.parent_uuid is None and not disabled and DISABLED in found.traits:
        return False
    return set(provider.aggregates) <= found.aggregates


def survey(engine: Engine, hosts: Sequence[HostTrees]) -> dict[str, str]:
    """host -> MISSING (no provider of it exists), SAME, or DIFFERENT."""
    uuids = [p.uuid for h in hosts for p in h.providers()]
    with db.read(engine) as conn:
        found, sizes = _read(conn, uuids)
    verdict: dict[str, str] = {}
    for h in hosts:
        providers = list(h.providers())
        present = [p for p in providers if p.uuid in found]
        if not present:
            verdict[h.host] = MISSING
            continue
        same = len(present) == len(providers) and all(
            _matches(p, found[p.uuid], h.disabled) for p in providers) and all(
            sizes.get(found[t.root.uuid].id, 0) == len(list(t)) for t in h.trees)
        verdict[h.host] = SAME if same else DIFFERENT
    return verdict


def create_missing(engine: Engine, hosts: Sequence[HostTrees]) -> list[str]:
    """Create every provider of these (new) hosts; returns the hosts created. A host whose
    providers cannot be written this way (a name already taken, an unknown standard trait)
    is left out, for its compute's own first pass to create or to report."""
    created: list[str] = []
    for i in range(0, len(hosts), HOSTS_PER_WRITE):
        with db.write(engine) as conn:
            created.extend(_create(conn, hosts[i:i + HOSTS_PER_WRITE]))
    return created


def _inserted_id(result: sa.CursorResult) -> int:
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def _ensure_names(conn: Connection, table: sa.Table, names: set[str]) -> dict[str, int]:
    """Name -> id; CUSTOM_ names are created, others must exist (they are seeded)."""
    ids: dict[str, int] = {}
    ordered = sorted(names)
    for part in _chunks(ordered):
        ids.update(conn.execute(sa.select(table.c.name, table.c.id)
                                .where(table.c.name.in_(part))).tuples().all())
    stamp = now()
    for name in ordered:
        if name not in ids and name.startswith("CUSTOM_"):
            ids[name] = _inserted_id(conn.execute(sa.insert(table).values(
                name=name, created_at=stamp)))
    return ids


def _create(conn: Connection, hosts: Sequence[HostTrees]) -> list[str]:
    rp = ps.resource_providers
    names = [p.name for h in hosts for p in h.providers()]
    taken: set[str] = set()
    for part in _chunks(names):
        taken.update(conn.execute(sa.select(rp.c.name).where(rp.c.name.in_(part))).scalars())
    rc_ids = _ensure_names(conn, ps.resource_classes,
                           {rc for h in hosts for p in h.providers() for rc in p.inventories})
    trait_ids = _ensure_names(conn, ps.traits, {t for h in hosts for p in h.providers()
                                                for t in _wanted_traits(p, h.disabled)})
    usable = [h for h in hosts if not any(
        p.name in taken or not set(p.inventories) <= rc_ids.keys()
        or not _wanted_traits(p, h.disabled) <= trait_ids.keys() for p in h.providers())]
    if not usable:
        return []
    agg_ids = _aggregate_ids(conn, {a for h in usable for p in h.providers()
                                    for a in p.aggregates})
    # serve is the only writer (BEGIN IMMEDIATE holds SQLite's write lock), so ids
    # can be handed out here and every table filled with one statement each.
    next_id = int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(rp.c.id), 0)))
                  .scalar_one()) + 1
    stamp = now()
    ids: dict[str, int] = {}
    rp_rows, inv_rows, trait_rows, agg_rows = [], [], [], []
    for h in usable:
        for tree in h.trees:
            root_id = next_id
            for p in tree:  # parents come before their children
                ids[p.uuid] = next_id
                next_id += 1
                rp_rows.append({"id": ids[p.uuid], "uuid": p.uuid, "name": p.name,
                                "generation": 1, "root_provider_id": root_id,
                                "parent_provider_id": ids[p.parent_uuid] if p.parent_uuid
                                else None, "created_at": stamp})
                inv_rows += [{"resource_provider_id": ids[p.uuid],
                              "resource_class_id": rc_ids[rc], "created_at": stamp,
                              **inv.as_dict()} for rc, inv in p.inventories.items()]
                trait_rows += [{"resource_provider_id": ids[p.uuid],
                                "trait_id": trait_ids[t], "created_at": stamp}
                               for t in sorted(_wanted_traits(p, h.disabled))]
                agg_rows += [{"resource_provider_id": ids[p.uuid], "aggregate_id": agg_ids[a],
                              "created_at": stamp} for a in sorted(p.aggregates)]
    for table, rows in ((rp, rp_rows), (ps.inventories, inv_rows),
                        (ps.resource_provider_traits, trait_rows),
                        (ps.resource_provider_aggregates, agg_rows)):
        if rows:
            conn.execute(sa.insert(table), rows)
    record_change(conn, ids.values())
    return [h.host for h in usable]


def _aggregate_ids(conn: Connection, uuids: set[str]) -> dict[str, int]:
    agg = ps.placement_aggregates
    ordered = sorted(uuids)
    ids: dict[str, int] = {}
    for part in _chunks(ordered):
        ids.update(conn.execute(sa.select(agg.c.uuid, agg.c.id)
                                .where(agg.c.uuid.in_(part))).tuples().all())
    for uuid in ordered:
        if uuid not in ids:
            ids[uuid] = _inserted_id(conn.execute(sa.insert(agg).values(uuid=uuid)))
    return ids
