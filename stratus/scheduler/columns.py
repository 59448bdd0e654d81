"""Host states in columns: how the scheduler decides at a thousand candidates.

At Nova's default ``max_placement_results`` (1000) a decision used to make a
:class:`HostState` per candidate and run each filter and weigher per host in Python,
most of the scheduler's own cost. Here the same facts are numpy columns over the
candidate hosts; filters and weighers have column forms, next to their per-host forms
in ``filters.py`` and ``weighers.py``, that answer for every host at once; and a
HostState is made only for the hosts a decision looks at (the one it claims, its
alternates). The per-host path stays the reference, and is still what dry runs and
zones use: ``tests/property/test_columnar_equivalence.py`` checks on random fleets that
both paths pass, count and rank the same hosts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

from stratus.placement.candidate_table import CandidateTable
from stratus.scheduler.host_cache import NUMBERS, TEXT, microseconds
from stratus.scheduler.host_manager import Located
from stratus.scheduler.host_state import HostState

# (cell uuid, host) -> (servers on the host, of them the request's project's)
InstanceCounts = Mapping[tuple[str, str], tuple[int, int]]


@dataclass
class HostColumns:
    """The candidate hosts found in a cell, in Placement's order; index ``i`` is a host."""

    table: CandidateTable
    rows: np.ndarray                  # each host's row in the table
    uuid: list[str]
    host: list[str]
    nodename: list[str]
    cell: list[str]
    disabled_reason: list[str | None]
    hypervisor_type: list[str]
    up: np.ndarray
    disabled: np.ndarray
    version: np.ndarray
    vcpus_total: np.ndarray
    vcpus_used: np.ndarray
    memory_mb_total: np.ndarray
    memory_mb_used: np.ndarray
    disk_gb_total: np.ndarray
    disk_gb_used: np.ndarray
    num_instances: np.ndarray         # servers there: before this decision and its batch's
    project_instances: np.ndarray     # of them, the request's project's
    instance_count: np.ndarray        # servers there before this decision (0: not counted)
    project_instance_count: np.ndarray
    zone_of: Mapping[str, str]        # host -> availability zone (absent: the default)
    default_zone: str
    _zones: list[str] | None = None
    _states: dict[int, HostState] = field(default_factory=dict)
    _made: dict[str, int] = field(default_factory=dict)   # uuid -> i, of states made

    def __len__(self) -> int:
        return len(self.uuid)

    @property
    def zones(self) -> list[str]:
        """Each host's availability zone (worked out when a filter first asks)."""
        if self._zones is None:
            get, default = self.zone_of.get, self.default_zone
            self._zones = [get(h) or default for h in self.host]
        return self._zones

    def state(self, i: int) -> HostState:
        """Host ``i`` as the per-host path would have it (made once, then kept: a batch
        consumes on it)."""
        found = self._states.get(i)
        if found is None:
            found = self._states[i] = HostState(
                host=self.host[i], nodename=self.nodename[i], uuid=self.uuid[i],
                cell=self.cell[i], availability_zone=self.zone_of.get(self.host[i])
                or self.default_zone, service_up=bool(self.up[i]),
                service_disabled=bool(self.disabled[i]),
                disabled_reason=self.disabled_reason[i],
                service_version=int(self.version[i]), hypervisor_type=self.hypervisor_type[i],
                vcpus_total=int(self.vcpus_total[i]), vcpus_used=int(self.vcpus_used[i]),
                memory_mb_total=int(self.memory_mb_total[i]),
                memory_mb_used=int(self.memory_mb_used[i]),
                disk_gb_total=int(self.disk_gb_total[i]), disk_gb_used=int(self.disk_gb_used[i]),
                instance_count=int(self.instance_count[i]),
                project_instance_count=int(self.project_instance_count[i]),
                allocation_requests=self.table.requests_of(int(self.rows[i])))
            self._made[found.uuid] = i
        return found

    def index_of(self, uuid: str) -> int | None:
        """The index of a host whose state was made (every host a decision tried)."""
        return self._made.get(uuid)

    def consume(self, state: HostState, vcpus: int, memory_mb: int, disk_gb: int,
                instance_uuid: str) -> None:
        """An instance placed on a host (a state made here): in its state and in the
        columns."""
        i = self._made[state.uuid]
        state.consume(vcpus, memory_mb, disk_gb, instance_uuid)
        self.vcpus_used[i] = state.vcpus_used
        self.memory_mb_used[i] = state.memory_mb_used
        self.disk_gb_used[i] = state.disk_gb_used
        self.num_instances[i] = state.num_instances
        self.project_instances[i] = state.project_instances

    def count_instances(self, counts: InstanceCounts) -> None:
        """The servers already on each host ((cell, host) -> (all, the project's))."""
        for i, key in enumerate(zip(self.cell, self.host, strict=True)):
            found = counts.get(key)
            if found is not None:
                self.instance_count[i], self.project_instance_count[i] = found
        self.num_instances[:] = self.instance_count
        self.project_instances[:] = self.project_instance_count


def build(table: CandidateTable, located: Located, zone_of: Mapping[str, str],
          default_zone: str) -> HostColumns:
    """Columns for the table's hosts that ``located`` found in a cell, gathered from the
    cells' columns; Placement's capacity and usage replace the cell's figures where
    Placement has them (it is the book of record; a compute_nodes row may lag)."""
    rows = np.flatnonzero(located.cell_of >= 0)
    n = len(rows)
    cell_of, pos = located.cell_of[rows], located.pos[rows]
    numbers = np.zeros((n, len(NUMBERS)), np.int64)
    disabled, up = np.zeros(n, bool), np.zeros(n, bool)
    text = {name: np.empty(n, object) for name in TEXT}
    cell = np.empty(n, object)
    seen_since = microseconds(located.seen_since)
    for c, (cell_uuid, cols) in enumerate(located.cells):
        here = cell_of == c
        at = pos[here]
        numbers[here] = cols.numbers[at]
        disabled[here] = cols.disabled[at]
        up[here] = cols.alive[at] & (cols.last_seen[at] >= seen_since)
        for name in TEXT:
            text[name][here] = cols.text[name][at]
        cell[here] = cell_uuid
    figures = dict(zip(NUMBERS, numbers.T, strict=True))

    def overlay(rc: str, total: str, used: str) -> tuple[np.ndarray, np.ndarray]:
        tree = table.usage[rc]
        present = tree.present[rows]
        return (np.where(present, tree.capacity[rows], figures[total]),
                np.where(present, tree.used[rows], figures[used]))

    vcpus = overlay("VCPU", "vcpus", "vcpus_used")
    memory = overlay("MEMORY_MB", "memory_mb", "memory_mb_used")
    disk = overlay("DISK_GB", "disk_gb", "disk_gb_used")
    return HostColumns(
        table=table, rows=rows, uuid=text["uuid"].tolist(), host=text["host"].tolist(),
        nodename=text["nodename"].tolist(), cell=cell.tolist(),
        disabled_reason=text["disabled_reason"].tolist(),
        hypervisor_type=text["hypervisor_type"].tolist(), up=up, disabled=disabled,
        version=figures["version"].copy(), vcpus_total=vcpus[0], vcpus_used=vcpus[1],
        memory_mb_total=memory[0], memory_mb_used=memory[1], disk_gb_total=disk[0],
        disk_gb_used=disk[1], num_instances=np.zeros(n, np.int64),
        project_instances=np.zeros(n, np.int64), instance_count=np.zeros(n, np.int64),
        project_instance_count=np.zeros(n, np.int64), zone_of=zone_of,
        default_zone=default_zone)


class RankedStates(Sequence[HostState]):
    """Hosts best first, each made into a HostState only when read."""

    def __init__(self, cols: HostColumns, order: np.ndarray) -> None:
        self._cols = cols
        self._order = order.tolist()

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, k: int) -> HostState: ...
    @overload
    def __getitem__(self, k: slice) -> list[HostState]: ...

    def __getitem__(self, k: int | slice) -> HostState | list[HostState]:
        if isinstance(k, slice):
            return [self._cols.state(i) for i in self._order[k]]
        return self._cols.state(self._order[k])

    def __iter__(self) -> Iterator[HostState]:
        state = self._cols.state
        for i in self._order:
            yield state(i)
