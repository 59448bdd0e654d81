"""``heal_allocations``: give servers the allocations they should hold, and their ports the
``binding:profile.allocation`` that says which provider serves them (design document 004:
servers booted before ports were placed, or whose books were lost).

Per server on a host with no task running:

* no allocations (or ``force``): the flavor's VCPU, MEMORY_MB and DISK_GB on its compute
  node's root provider;
* each port whose binding records its providers (``allocation``) is asked first: what
  it records is what the server must hold there, and is added where the server holds
  less (its allocations lost, rebuilt by ``force``, or never written). A record that
  names a provider outside the server's host, or one without the traits its group
  requires, is not believed: the port counts as unrecorded;
* each port with a resource request and no (believable) record: Placement is asked for
  the port's groups on the server's own node only (``in_tree``). As Nova does, the port
  is healed only when exactly one candidate exists. Two providers of the host that
  could both serve it (two NICs on one physnet, say) make the server **ambiguous**:
  nothing of it is written, and the report names each port, its groups, the providers
  that could serve them and what to do (record the provider in the port's binding and
  heal again, or migrate the server: a move places its ports anew). Other servers are
  healed meanwhile; the exit status is then 3.

The ports are written first and rolled back if the allocation cannot be, so a failure
leaves nothing half done. Exit codes follow ``nova-manage placement heal_allocations``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from stratus.cells import moves
from stratus.cells import schema as cs
from stratus.network import client as nc
from stratus.network.model import (
    PortGroup,
    binding_allocation,
    port_groups,
    provider_resources,
    same_subtree,
)
from stratus.placement import client as pc
from stratus.storage import engine as db

# nova-manage placement heal_allocations' exit codes.
HEALED, NOTHING_TO_DO, FAILED, PORTS_UNREADABLE, PORTS_NOT_UPDATED = 0, 4, 3, 5, 6


class HealError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Ambiguous(HealError):
    """More than one provider of the server's host could serve a port that does not
    record which one serves it: healing it would be a guess."""

    def __init__(self, instance_uuid: str, detail: str) -> None:
        super().__init__(FAILED, f"instance {instance_uuid}: {detail}")
        self.instance_uuid = instance_uuid


@dataclass(frozen=True)
class Healed:
    instance_uuid: str
    what: list[str]                                   # what was (or would be) done
    allocations: dict[str, dict[str, int]]
    ports: dict[str, Any] = field(default_factory=dict)   # port -> its allocation


def flavor_resources(flavor_text: str | None) -> dict[str, int]:
    flavor = json.loads(flavor_text) if flavor_text else {}
    disk = int(flavor.get("root_gb", 0)) + int(flavor.get("ephemeral_gb", 0)) + \
        math.ceil(int(flavor.get("swap_mb", 0)) / 1024)
    wanted = {"VCPU": int(flavor.get("vcpus", 0)), "MEMORY_MB": int(flavor.get("memory_mb", 0)),
              "DISK_GB": disk}
    return {rc: n for rc, n in wanted.items() if n > 0}


def healable(cell_engine: Engine, instance_uuid: str | None = None) -> list[dict[str, Any]]:
    """The cell's servers that run on a host with no task (one, if ``instance_uuid``)."""
    t = cs.instances
    query = sa.select(t).where(t.c.deleted_at.is_(None), t.c.host.is_not(None),
                               t.c.task_state.is_(None),
                               t.c.vm_state != moves.SHELVED_OFFLOADED)
    if instance_uuid is not None:
        query = query.where(t.c.uuid == instance_uuid)
    with db.read(cell_engine) as conn:
        return [dict(r._mapping) for r in conn.execute(query.order_by(t.c.id))]


def _root(cell_engine: Engine, instance: Mapping[str, Any]) -> str:
    n = cs.compute_nodes
    with db.read(cell_engine) as conn:
        root = conn.execute(sa.select(n.c.uuid).where(
            n.c.hypervisor_hostname == (instance["node"] or instance["host"]))).scalar()
    if root is None:
        raise HealError(FAILED, f"instance {instance['uuid']}: its compute node "
                                f"{instance['node']} is not known in its cell")
    return str(root)


def heal_instance(placement: pc.PlacementClient, network: nc.NetworkClient | None,
                  cell_engine: Engine, instance: Mapping[str, Any], *, force: bool = False,
                  dry_run: bool = False, ports_only: bool = False) -> Healed | None:
    """Heal one server (see the module); what was done, or None if nothing was needed.
    Ambiguous when a port's provider would have to be guessed (nothing is written)."""
    uuid = str(instance["uuid"])
    root = _root(cell_engine, instance)
    held = placement.get_allocations(uuid)
    allocations = {rp: dict(a["resources"]) for rp, a in
                   (held.get("allocations") or {}).items()}
    what: list[str] = []
    if not ports_only and (not allocations or force):
        what.append("created allocations" if not allocations else "rebuilt allocations")
        allocations = {root: flavor_resources(instance.get("flavor"))}
    try:
        ports = network.list_ports(device_id=uuid) if network is not None else []
    except nc.NetworkClientError as exc:
        raise HealError(PORTS_UNREADABLE, f"instance {uuid}: its ports cannot be read: "
                                          f"{exc}") from None
    recorded, unrecorded = _believable(placement, root, [p for p in ports if port_groups(p)])
    if _raise_to(allocations, _recorded_amounts(recorded)):
        what.append("allocations for port(s) "
                    f"{', '.join(sorted(str(p['id']) for p in recorded))} where their "
                    "bindings record them")
    port_values: dict[str, Any] = {}
    if unrecorded:
        added, port_values = _port_candidate(placement, uuid, root, unrecorded)
        for rp, amounts in added.items():
            into = allocations.setdefault(rp, {})
            for rc, n in amounts.items():
                into[rc] = into.get(rc, 0) + n
        what.append(f"allocations for port(s) {', '.join(sorted(port_values))}")
    if not what:
        return None
    healed = Healed(uuid, what, allocations, port_values)
    if dry_run:
        return healed
    _write(placement, network, uuid, instance, held, allocations, unrecorded, port_values)
    return healed


def _believable(placement: pc.PlacementClient, root: str, ports: list[dict[str, Any]]
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the ports whose bindings record, for every group, a provider of the server's own
    tree that has the group's traits; the others)."""
    if not ports:
        return [], []
    tree = {str(p["uuid"]) for p in placement.providers_in_tree(root)}
    traits: dict[str, set[str]] = {}

    def believed(port: Mapping[str, Any]) -> bool:
        allocation = (port.get("binding:profile") or {}).get("allocation")
        if not allocation:
            return False
        for group in port_groups(port):
            rp = str(allocation if isinstance(allocation, str)
                     else allocation.get(group.suffix) or "")
            if rp not in tree:
                return False
            if rp not in traits:
                traits[rp] = placement.get_traits(rp)[0]
            if not set(group.required) <= traits[rp]:
                return False
        return True

    recorded = [p for p in ports if believed(p)]
    return recorded, [p for p in ports if p not in recorded]


def _recorded_amounts(ports: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """What the ports' bindings say the server holds for them, per provider."""
    out: dict[str, dict[str, int]] = {}
    for port in ports:
        for rp, amounts in provider_resources(port).items():
            into = out.setdefault(rp, {})
            for rc, n in amounts.items():
                into[rc] = into.get(rc, 0) + n
    return out


def _raise_to(allocations: dict[str, dict[str, int]],
              wanted: Mapping[str, Mapping[str, int]]) -> bool:
    """``allocations`` raised to ``wanted`` where they hold less; whether they changed."""
    changed = False
    for rp, amounts in wanted.items():
        into = allocations.setdefault(rp, {})
        for rc, n in amounts.items():
            if into.get(rc, 0) < n:
                into[rc] = n
                changed = True
    return changed


def _port_candidate(placement: pc.PlacementClient, uuid: str, root: str,
                    ports: list[dict[str, Any]]) -> tuple[dict[str, dict[str, int]],
                                                          dict[str, Any]]:
    """The one way the ports' groups fit on the server's host: what to add to its
    allocation, and each port's binding allocation. Ambiguous if there are several."""
    groups = [g for p in ports for g in port_groups(p)]
    params: list[tuple[str, str]] = []
    for group in groups:
        s = group.suffix
        params += [(f"resources{s}", ",".join(f"{rc}:{n}" for rc, n in
                                              sorted(group.resources.items()))),
                   (f"required{s}", ",".join(sorted(group.required))),
                   (f"in_tree{s}", root)]
    for port in ports:
        if subtree := same_subtree(port):
            params.append(("same_subtree", ",".join(subtree)))
    params.append(("group_policy", "none"))
    try:
        found = placement.allocation_candidates(params)
    except pc.PlacementClientError as exc:
        raise HealError(FAILED, f"instance {uuid}: Placement refused the ports' request: "
                                f"{exc.detail}") from None
    if not found.allocation_requests:
        raise HealError(FAILED, f"instance {uuid}: Placement returned no allocation "
                                "candidate to fulfill the resource request of the port(s) "
                                f"{', '.join(p['id'] for p in ports)} on its host")
    ways = {json.dumps(c.get("mappings") or {}, sort_keys=True): c
            for c in found.allocation_requests}
    if len(ways) > 1:
        raise Ambiguous(uuid, _ambiguity(placement, groups,
                                         [c.get("mappings") or {} for c in ways.values()]))
    candidate = next(iter(ways.values()))
    mappings = candidate.get("mappings") or {}
    added = {rp: dict(a["resources"]) for rp, a in candidate["allocations"].items()}
    return added, {str(p["id"]): binding_allocation(p, mappings) for p in ports}


def _ambiguity(placement: pc.PlacementClient, groups: list[PortGroup],
               ways: list[Mapping[str, list[str]]]) -> str:
    """What the operator reads: each port group and the providers that could serve it."""
    names: dict[str, str] = {}

    def name(rp: str) -> str:
        if rp not in names:
            found = placement.get_provider(rp)
            names[rp] = f"{found['name']} ({rp})" if found else rp
        return names[rp]

    parts = []
    for group in groups:
        could = sorted({rp for way in ways for rp in way.get(group.suffix, ())})
        wants = ", ".join(f"{rc}={n}" for rc, n in sorted(group.resources.items()))
        parts.append(f"port {group.port_id}'s request group {group.suffix} ({wants}; "
                     f"{', '.join(sorted(group.required))}) could be served by "
                     f"{', '.join(name(rp) for rp in could)}")
    return ("not healed: its host has more than one provider that could serve its "
            f"port(s), and their bindings do not record which one does: {'; '.join(parts)}. "
            "Heal would have to guess. Record each port's provider in its binding "
            "(binding:profile allocation) and heal again, or migrate the server (a move "
            "places its ports anew).")


def _write(placement: pc.PlacementClient, network: nc.NetworkClient | None, uuid: str,
           instance: Mapping[str, Any], held: Mapping[str, Any],
           allocations: dict[str, dict[str, int]], ports: list[dict[str, Any]],
           values: dict[str, Any]) -> None:
    done: list[dict[str, Any]] = []
    for port in ports:
        assert network is not None
        profile = dict(port.get("binding:profile") or {})
        profile["allocation"] = values[str(port["id"])]
        try:
            network.set_profile(str(port["id"]), profile)
        except nc.NetworkClientError as exc:
            _restore(network, done)
            raise HealError(PORTS_NOT_UPDATED, f"instance {uuid}: port {port['id']} could "
                                               f"not be updated: {exc}") from None
        done.append(port)
    try:
        placement.put_allocations(uuid, {rp: {"resources": r} for rp, r in allocations.items()},
                                  held.get("project_id") or instance["project_id"],
                                  held.get("user_id") or instance["user_id"],
                                  held.get("consumer_generation"))
    except pc.PlacementClientError as exc:
        if network is not None:
            _restore(network, done)
        raise HealError(FAILED, f"instance {uuid}: its allocations could not be written: "
                                f"{exc.detail}") from None


def _restore(network: nc.NetworkClient, ports: list[dict[str, Any]]) -> None:
    for port in ports:
        network.set_profile(str(port["id"]), port.get("binding:profile") or {})


def heal_all(placement: pc.PlacementClient, network: nc.NetworkClient | None,
             cells: Iterator[tuple[str, Engine]], *, instance_uuid: str | None = None,
             force: bool = False, dry_run: bool = False,
             say: Callable[[str], None] = print) -> int:
    """Heal every server of ``cells`` ((name, engine) pairs); the exit code. A server that
    would need a guess is reported and left alone; the others are healed."""
    healed = ambiguous = 0
    for name, engine in cells:
        for instance in healable(engine, instance_uuid):
            try:
                result = heal_instance(placement, network, engine, instance, force=force,
                                       dry_run=dry_run)
            except Ambiguous as exc:
                say(f"{'[dry-run] ' if dry_run else ''}{exc} (cell {name})")
                ambiguous += 1
                continue
            if result is None:
                continue
            prefix = "[dry-run] would heal" if dry_run else "healed"
            say(f"{prefix} instance {result.instance_uuid} (cell {name}): "
                f"{'; '.join(result.what)}: {json.dumps(result.allocations, sort_keys=True)}"
                + (f"; ports: {json.dumps(result.ports, sort_keys=True)}"
                   if result.ports else ""))
            healed += 0 if dry_run else 1
    if ambiguous:
        return FAILED
    return HEALED if healed else NOTHING_TO_DO
