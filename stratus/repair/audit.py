"""The allocation audit (``stratus-manage placement audit``): do Placement, the cells and
the network service tell the same story?

Findings, each with what would repair it:

* ``orphan``: a consumer holds allocations but is neither a live server nor a
  migration still in progress (a leak: ``--delete`` removes them);
* ``ended-migration``: a migration that ended (confirmed, reverted, completed, error)
  still holds allocations (``--delete``);
* ``missing``: a server that runs on a host holds nothing on that host's tree
  (``heal_allocations`` repairs it); a shelved-offloaded server that holds something
  (``--delete``);
* ``port-elsewhere``: a port is bound to a host its server is not on, or to a host
  while its server is gone or has none;
* ``port-allocation``: what a server's bound ports' ``allocation`` keys name does not
  add up to what the server holds there: a provider named for more than the server
  holds on it, or a server holding a port's resource class on a provider none of its
  ports names (a port bound to one NIC, its bandwidth held on another:
  ``heal_allocations --force`` repairs it);
* ``port-unplaced``: a bound port asks for resources and its binding names no provider
  (``heal_allocations`` repairs it).

Everything is read through the public APIs and the cell databases, never Placement's
tables, so it also audits a real Placement or Neutron. Only consumers holding something on
the trees of the cells' compute nodes are this deployment's to judge: a consumer whose
allocations are all on other providers (another deployment sharing the Placement) is
counted and left alone, so ``--delete`` can never remove it. Which Placement and network
service are this deployment's is proven before the audit runs
(``stratus.cli.manage_target``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.api import schema as api_schema
from stratus.cells import moves
from stratus.cells import schema as cs
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import list_cells
from stratus.network.client import NetworkClient
from stratus.network.model import port_groups, provider_resources
from stratus.placement.client import PlacementClient
from stratus.storage import engine as db

NO_HOST_STATES = (moves.SHELVED_OFFLOADED, "building")


@dataclass(frozen=True)
class Finding:
    kind: str
    consumer: str
    detail: str
    allocations: dict[str, dict[str, int]] = field(default_factory=dict)

    def line(self) -> str:
        return f"{self.kind}: {self.consumer}: {self.detail}"


@dataclass
class Books:
    """What the audit reads: the API database, every cell's, Placement, the network."""

    api_engine: Engine
    engines: CellEngines
    placement: PlacementClient
    network: NetworkClient | None = None


@dataclass(frozen=True)
class _Server:
    uuid: str
    host: str | None
    node: str | None
    vm_state: str
    task_state: str | None


@dataclass(frozen=True)
class Report:
    findings: list[Finding]
    # Consumers whose allocations are all on providers outside this deployment's trees.
    foreign: int = 0


def cells_state(api_engine: Engine, engines: CellEngines
                ) -> tuple[dict[str, _Server], dict[str, moves.Migration], dict[str, str]]:
    """Live servers (mapped, not deleted), every migration, node name -> root uuid."""
    with db.read(api_engine) as conn:
        cells = list_cells(conn)
        wanted = {r.instance_uuid for r in conn.execute(
            sa.select(api_schema.instance_mappings.c.instance_uuid)
            .where(api_schema.instance_mappings.c.queued_for_delete == sa.false()))}
        building = {r.instance_uuid for r in conn.execute(
            sa.select(api_schema.build_requests.c.instance_uuid))}
    servers: dict[str, _Server] = {}
    migrations: dict[str, moves.Migration] = {}
    roots: dict[str, str] = {}
    for cell in cells:
        with db.read(engines.get(cell)) as conn:
            t = cs.instances
            for r in conn.execute(sa.select(t.c.uuid, t.c.host, t.c.node, t.c.vm_state,
                                            t.c.task_state).where(t.c.deleted_at.is_(None))):
                if r.uuid in wanted:
                    servers[r.uuid] = _Server(r.uuid, r.host, r.node, r.vm_state,
                                              r.task_state)
            for m in moves.listed(conn):
                migrations[m.uuid] = m
            n = cs.compute_nodes
            roots.update({r.hypervisor_hostname: r.uuid for r in conn.execute(
                sa.select(n.c.hypervisor_hostname, n.c.uuid))})
    for uuid in building - set(servers):   # accepted, no cell yet
        servers[uuid] = _Server(uuid, None, None, "building", "scheduling")
    return servers, migrations, roots


def _held(placement: PlacementClient) -> tuple[dict[str, dict[str, dict[str, int]]],
                                               dict[str, str]]:
    """consumer -> provider -> amounts, over every provider; provider -> its root."""
    body = placement._call("GET", "/resource_providers").json()
    held: dict[str, dict[str, dict[str, int]]] = {}
    root_of: dict[str, str] = {}
    for rp in body["resource_providers"]:
        root_of[rp["uuid"]] = rp.get("root_provider_uuid") or rp["uuid"]
        for consumer, amounts in placement.provider_allocations(rp["uuid"]).items():
            held.setdefault(consumer, {})[rp["uuid"]] = dict(amounts)
    return held, root_of


def audit(books: Books) -> list[Finding]:
    return audit_report(books).findings


def audit_report(books: Books) -> Report:
    servers, migrations, roots = cells_state(books.api_engine, books.engines)
    held, root_of = _held(books.placement)
    ours = set(roots.values())
    mine = {consumer: allocations for consumer, allocations in held.items()
            if any(root_of.get(rp, rp) in ours for rp in allocations)}
    findings = [*_allocation_findings(servers, migrations, roots, mine, root_of),
                *_port_findings(books, servers, mine)]
    return Report(findings, foreign=len(held) - len(mine))


def _allocation_findings(servers: dict[str, _Server], migrations: dict[str, moves.Migration],
                         roots: dict[str, str], held: dict[str, dict[str, dict[str, int]]],
                         root_of: dict[str, str]) -> Iterator[Finding]:
    for consumer, allocations in sorted(held.items()):
        server, migration = servers.get(consumer), migrations.get(consumer)
        if migration is not None:
            if migration.status in moves.ENDED:
                yield Finding("ended-migration", consumer, f"migration of server "
                              f"{migration.instance_uuid} is {migration.status} but holds "
                              "allocations", allocations)
            continue
        if server is None:
            yield Finding("orphan", consumer, "holds allocations but is no live server "
                          "and no migration in progress", allocations)
        elif server.vm_state == moves.SHELVED_OFFLOADED and server.task_state is None:
            yield Finding("missing", consumer, "is shelved offloaded but still holds "
                          "allocations", allocations)
    for uuid, server in sorted(servers.items()):
        if not server.host or server.vm_state in NO_HOST_STATES or server.task_state:
            continue
        root = roots.get(server.node or server.host)
        trees = {root_of.get(rp, rp) for rp in held.get(uuid, {})}
        if root is None or root not in trees:
            yield Finding("missing", uuid, f"runs on {server.host} but holds nothing on "
                          f"its compute node (heal_allocations --instance {uuid})")


def _port_findings(books: Books, servers: dict[str, _Server],
                   held: dict[str, dict[str, dict[str, int]]]) -> Iterator[Finding]:
    if books.network is None:
        return
    named: dict[str, dict[str, dict[str, int]]] = {}   # server -> provider -> amounts
    classes: dict[str, set[str]] = {}                   # server -> its ports' classes
    for port in books.network.list_ports():
        host = port.get("binding:host_id") or ""
        if not host:
            continue
        server = servers.get(port.get("device_id") or "")
        if server is None or server.task_state:
            if server is None:
                yield Finding("port-elsewhere", port["id"], f"is bound to {host} but its "
                              f"server {port.get('device_id') or '(none)'} is gone")
            continue
        if server.host != host:
            where = f"is on {server.host}" if server.host else f"is {server.vm_state}"
            yield Finding("port-elsewhere", port["id"], f"is bound to {host} but its "
                          f"server {server.uuid} {where}")
            continue
        groups = port_groups(port)
        if groups and not (port.get("binding:profile") or {}).get("allocation"):
            yield Finding("port-unplaced", port["id"], f"asks for resources but its binding "
                          f"names no provider (heal_allocations --instance {server.uuid})")
            continue
        classes.setdefault(server.uuid, set()).update(
            rc for g in groups for rc in g.resources)
        mine = named.setdefault(server.uuid, {})
        for rp, amounts in provider_resources(port).items():
            into = mine.setdefault(rp, {})
            for rc, n in amounts.items():
                into[rc] = into.get(rc, 0) + n
    for uuid in sorted(named):
        yield from _port_books(uuid, named[uuid], classes[uuid], held.get(uuid, {}))


def _port_books(uuid: str, named: dict[str, dict[str, int]], classes: set[str],
                holds: dict[str, dict[str, int]]) -> Iterator[Finding]:
    """A server's port classes held per provider against what its ports' bindings name
    there (the flavor's classes are not the ports' business)."""
    for rp in sorted(set(named) | set(holds)):
        want = named.get(rp, {})
        have = {rc: n for rc, n in holds.get(rp, {}).items() if rc in classes}
        short = {rc: n for rc, n in want.items() if have.get(rc, 0) < n}
        extra = {rc: n for rc, n in have.items() if n > want.get(rc, 0)}
        if short:
            yield Finding("port-allocation", uuid, f"its ports' bindings name provider {rp} "
                          f"for {short} but the server holds {have or 'nothing'} there "
                          f"(heal_allocations --force --instance {uuid})")
        elif extra:
            yield Finding("port-allocation", uuid, f"holds {extra} on provider {rp} but its "
                          f"ports' bindings name {want or 'nothing'} there "
                          f"(heal_allocations --force --instance {uuid})")


def delete_leaks(books: Books, findings: list[Finding]) -> list[Finding]:
    """Delete the allocations of orphans, ended migrations and offloaded servers; the
    findings acted on."""
    done = []
    for finding in findings:
        if finding.kind in ("orphan", "ended-migration") or (
                finding.kind == "missing" and finding.allocations):
            books.placement.delete_allocations(finding.consumer)
            done.append(finding)
    return done


def summary(findings: list[Finding]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    return counts
