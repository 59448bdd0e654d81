"""The conductor's side of the compute seam: ConductorRPC 1.4's ``compute_*`` calls, a
compute's cell records read and written for it (issue 29, :mod:`stratus.compute.records`).

A conductor serving a cell's bus answers for the cells whose mapping names that bus
(``transport_url``; an empty one shares the API-level bus). Each call names the calling
compute's ``host``, and is refused with :class:`NotYourRecord`, logged at WARNING, when:

- the message was sent by a compute (sender ``compute:NAME``, which a signed bus
  authenticates) and ``host`` is not that compute's (a ``stratus compute --count N``
  process signs as ``compute:NAME`` for its hosts ``NAME0001`` to ``NAMEnnnn``);
- it names a server that is live on another host (neither its host nor either end of a
  move in progress), or an action event another host began, or a compute node row of
  another host.

Every statement is the direct path's (:class:`~stratus.compute.records.DatabaseRecords`),
each of which is scoped by host; the checks above make a refusal loud instead of a
silent no-op.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from sqlalchemy.engine import Engine

from stratus.bus import current_sender
from stratus.cells import mappings, services
from stratus.cells.engines import CellEngines
from stratus.cells.mappings import CellMapping
from stratus.compute import records as r
from stratus.conductor.rpcapi import NotYourRecord
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
COMPUTE_PREFIX = "compute:"
_NUMBERED = re.compile(r"\d{4}")


def sender_owns(sender: str | None, host: str) -> bool:
    """Whether a message from ``sender`` may speak for ``host``. Only computes are bound
    to hosts; the control plane's own services (and in-process callers) are not."""
    if not sender or not sender.startswith(COMPUTE_PREFIX):
        return True
    name = sender[len(COMPUTE_PREFIX):]
    return host == name or (host.startswith(name)
                            and _NUMBERED.fullmatch(host[len(name):]) is not None)


F = TypeVar("F", bound=Callable[..., Any])


def not_from_computes(method: F) -> F:
    """A ConductorRPC method of the control plane (a build, a move...): a compute (a
    ``compute:`` sender, which a signed bus authenticates) may not ask for it. What a
    compute may ask is its records and a reschedule of its own failed spawn."""
    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        sender = current_sender()
        if sender and sender.startswith(COMPUTE_PREFIX):
            ComputeRecordsEndpoint._refuse(method.__name__, "a compute may not ask for it")
        return method(self, *args, **kwargs)
    return cast(F, checked)


class ComputeRecordsEndpoint:
    """The ``compute_*`` methods, for the cells a conductor's bus serves."""

    def __init__(self, api_engine: Engine, engines: CellEngines,
                 bus_url: str | None, api_bus_url: str | None = None) -> None:
        self.api_engine, self.engines = api_engine, engines
        self.bus_url, self.api_bus_url = bus_url or "", api_bus_url or bus_url or ""
        self._lock = threading.Lock()
        self._hosts: dict[str, r.DatabaseRecords] = {}

    # ---- which cell, whose record ------------------------------------------------------

    def _cells(self) -> list[CellMapping]:
        with db.read(self.api_engine) as conn:
            cells = [c for c in mappings.list_cells(conn) if not c.is_cell0]
        mine = [c for c in cells if (c.transport_url or self.api_bus_url) == self.bus_url]
        return mine

    def _records(self, host: str) -> r.DatabaseRecords:
        """The records of ``host``'s cell (found once, then kept)."""
        with self._lock:
            found = self._hosts.get(host)
        if found is not None:
            return found
        cells = self._cells()
        cell: CellMapping | None = None
        if len(cells) == 1:
            cell = cells[0]
        else:
            with db.read(self.api_engine) as conn:
                mapped = mappings.cell_of_host(conn, host)
            if mapped is not None and any(c.uuid == mapped.uuid for c in cells):
                cell = mapped
            else:
                for candidate in cells:
                    with db.read(self.engines.get(candidate)) as conn:
                        if services.list_all(conn, host=host):
                            cell = candidate
                            break
        if cell is None:
            raise NotYourRecord(f"host {host} has no cell served by this conductor"
                                + (" (several cells share its bus: map the host first)"
                                   if cells else ""))
        found = r.DatabaseRecords(self.engines.get(cell), adopt_unplaced=False)
        with self._lock:
            self._hosts[host] = found
        return found

    def _by_cell(self, hosts: list[str], skip_unknown: bool = False
                 ) -> list[tuple[r.DatabaseRecords, list[str]]]:
        """``hosts`` grouped by the cell whose records they are (``skip_unknown``: a host
        no cell of this conductor knows yet is left out rather than refused)."""
        by_cell: dict[int, tuple[r.DatabaseRecords, list[str]]] = {}
        for host in hosts:
            try:
                records = self._records(host)
            except NotYourRecord:
                if skip_unknown:
                    continue
                raise
            by_cell.setdefault(id(records.engine), (records, []))[1].append(host)
        return list(by_cell.values())

    def _mine(self, method: str, *hosts: str) -> None:
        sender = current_sender()
        for host in hosts:
            if not isinstance(host, str):   # the bus checks names, not types
                self._refuse(method, f"a host must be a name, not {host!r}")
            if not sender_owns(sender, host):
                self._refuse(method, f"{sender} may not speak for host {host}")

    @staticmethod
    def _refuse(method: str, why: str) -> None:
        LOG.warning("conductor: %s refused (%s; by %s)", method, why, current_sender())
        raise NotYourRecord(f"{method} refused: {why}")

    def _written(self, method: str, host: str, uuid: str, records: r.DatabaseRecords,
                 written: bool) -> bool:
        """A write scoped to ``host`` that found nothing: refused if the server is live
        on another host (one more read, only then), else simply False."""
        if not written:
            with db.read(records.engine) as conn:
                if r.on_host(conn, uuid, host) is False:
                    self._refuse(method, f"server {uuid} is not on host {host}")
        return written

    def _guarded(self, method: str, work: Any) -> Any:
        try:
            return work()
        except PermissionError as exc:
            self._refuse(method, str(exc))

    # ---- ConductorRPC 1.4 ----------------------------------------------------------------

    def compute_register(self, host: str, binary: str, version: int, now: str) -> int:
        self._mine("compute_register", host)
        return self._records(host).register(host, binary, version, _time(now))

    def compute_heartbeat(self, hosts: list[str], binary: str, now: str) -> None:
        self._mine("compute_heartbeat", *hosts)
        for records, members in self._by_cell(hosts):
            records.heartbeat(members, binary, _time(now))

    def compute_service(self, host: str, binary: str) -> dict[str, Any] | None:
        self._mine("compute_service", host)
        found = self._records(host).service(host, binary)
        return None if found is None else _service(found)

    def compute_hosts_state(self, hosts: list[str], binary: str) -> dict[str, Any]:
        self._mine("compute_hosts_state", *hosts)
        out: dict[str, Any] = {}
        for records, members in self._by_cell(hosts, skip_unknown=True):
            for host, (service, evacuations) in records.hosts_state(members, binary).items():
                out[host] = {"service": _service(service),
                             "evacuations": [list(e) for e in evacuations]}
        return out

    def compute_set_disabled(self, host: str, binary: str, disable: bool,
                             reason: str | None) -> bool:
        self._mine("compute_set_disabled", host)
        return self._records(host).set_service_disabled(host, binary, disable, reason)

    def compute_save_node(self, host: str, service_id: int | None, node: dict[str, Any],
                          now: str) -> None:
        self._mine("compute_save_node", host)
        records = self._records(host)
        if service_id is not None:
            with db.read(records.engine) as conn:
                try:
                    owner = services.get(conn, int(service_id)).host
                except services.ServiceNotFound:
                    owner = None
            if owner != host:
                self._refuse("compute_save_node", f"service {service_id} is not host "
                             f"{host}'s")
        try:
            record = r.NodeRecord(
                str(node["root_uuid"]), str(node["node"]), str(node["hypervisor_type"]),
                int(node["vcpus"]), int(node["memory_mb"]), int(node["local_gb"]),
                r.NodeUsage(int(node["vcpus_used"]), int(node["memory_mb_used"]),
                            int(node["local_gb_used"]), int(node["running_vms"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"compute_save_node: malformed node {exc}") from None
        self._guarded("compute_save_node",
                      lambda: records.save_node(host, service_id, record, _time(now)))

    def compute_root_providers(self, host: str) -> list[str]:
        self._mine("compute_root_providers", host)
        return self._records(host).root_provider_uuids(host)

    def compute_instance_active(self, host: str, instance_uuid: str, node: str, now: str,
                                started: str | None = None) -> bool:
        method = "compute_instance_active"
        self._mine(method, host)
        records = self._records(host)
        return self._written(method, host, instance_uuid, records, records.instance_active(
            instance_uuid, host, node, _time(now), r.unstamp(started)))

    def compute_instance_rescheduling(self, host: str, instance_uuid: str, now: str,
                                      reason: str, started: str) -> bool:
        method = "compute_instance_rescheduling"
        self._mine(method, host)
        records = self._records(host)
        return self._written(method, host, instance_uuid, records,
                             records.instance_rescheduling(instance_uuid, host, _time(now),
                                                           reason, _time(started)))

    def compute_instance_deleted(self, host: str, instance_uuid: str, now: str) -> bool:
        method = "compute_instance_deleted"
        self._mine(method, host)
        records = self._records(host)
        return self._written(method, host, instance_uuid, records,
                             records.instance_deleted(instance_uuid, host, _time(now)))

    def compute_instance_advance(self, host: str, instance_uuid: str,
                                 expect: list[str | None], values: dict[str, Any]) -> bool:
        method = "compute_instance_advance"
        self._mine(method, host)
        unknown = set(values) - r.ADVANCE_COLUMNS
        if unknown:
            self._refuse(method, f"a host action cannot write {', '.join(sorted(unknown))}")
        records = self._records(host)
        written = {k: _time(v) if k in r.DATETIME_COLUMNS and v is not None else v
                   for k, v in values.items()}
        return self._written(method, host, instance_uuid, records,
                             records.advance(instance_uuid, host, expect, written))

    def compute_event_start(self, host: str, instance_uuid: str, names: list[str],
                            event: str) -> int | None:
        method = "compute_event_start"
        self._mine(method, host)
        records = self._records(host)
        return self._guarded(method, lambda: records.start_event(instance_uuid, host, names,
                                                                 event))

    def compute_event_finish(self, host: str, event_id: int, error: str | None) -> None:
        method = "compute_event_finish"
        self._mine(method, host)
        records = self._records(host)
        self._guarded(method, lambda: records.finish_event(host, event_id, error))

    def compute_event_drop(self, host: str, event_id: int) -> None:
        method = "compute_event_drop"
        self._mine(method, host)
        records = self._records(host)
        self._guarded(method, lambda: records.drop_event(host, event_id))

    def compute_host_instances(self, host: str) -> dict[str, Any]:
        self._mine("compute_host_instances", host)
        found = self._records(host).host_instances(host)
        return {"running": [list(x) for x in found.running],
                "shelved": [list(x) for x in found.shelved],
                "left": [list(x) for x in found.left]}

    def compute_orphans(self, host: str, running: list[str],
                        outgoing: list[str]) -> dict[str, list[str]]:
        self._mine("compute_orphans", host)
        found = self._records(host).orphans(host, running, outgoing)
        return {"destroy": found.destroy, "drop": found.drop}

    def compute_evacuations_done(self, host: str) -> list[list[str]]:
        self._mine("compute_evacuations_done", host)
        return [list(x) for x in self._records(host).evacuations_done(host)]

    def compute_evacuation_finished(self, host: str, migration_uuid: str) -> bool:
        self._mine("compute_evacuation_finished", host)
        return self._records(host).evacuation_finished(host, migration_uuid)


def _service(found: r.ServiceState) -> dict[str, Any]:
    return {"id": found.id, "disabled": found.disabled,
            "disabled_reason": found.disabled_reason}


def _time(value: str) -> Any:
    try:
        return r.unstamp(value)
    except (TypeError, ValueError):
        raise ValueError(f"not an ISO 8601 time: {value!r}") from None
