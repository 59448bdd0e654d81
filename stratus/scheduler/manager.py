"""The scheduler service: ``select_destinations``, one small counted step after another.

::

    request spec -> query_from_spec -> request filters (context from the API DB)
      -> GET /allocation_candidates?limit=max_placement_results
      -> host states (enabled cells only) -> host filters -> weighers
      -> claim the best host's allocation request (retry races, then the next host)
      -> selection + alternates, per instance, consuming host state between picks

Two paths, same answers: *columnar* (the default, ``columns.py``: candidates as a table,
host facts as numpy columns, filters and weighers as vector operations, a HostState only
for the hosts a decision looks at) and *per host* (a HostState per candidate, each
filter and weigher per host: the reference, used by dry runs, zones, filters without a
column form, and to say why when nothing passes).

Whatever this call claims it also releases if it cannot place every instance
(a batch is all or nothing), so a NoValidHost never leaves allocations behind.
Every exclusion is counted by reason; NoValidHost carries the counts, with
Placement's own (``/allocation_candidates/explain``) when it has none to offer,
and says them in words (``explanation.py``: what was asked, how many hosts each
constraint removed, the nearest miss).
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

import numpy as np
from sqlalchemy.engine import Engine

from stratus import config as configuration
from stratus.metrics import defs as metrics
from stratus.placement import candidate_table
from stratus.placement import client as pc
from stratus.placement.candidate_table import CandidateTable
from stratus.scheduler import (
    claims,
    columns,
    context,
    dry_run,
    evidence,
    filters,
    no_valid_host_category,
    rebuild,
    request_filters,
    weighers,
)
from stratus.scheduler.errors import NoValidHost
from stratus.scheduler.explanation import Category, Evidence, explain, plain
from stratus.scheduler.host_manager import HostManager
from stratus.scheduler.host_state import HostState
from stratus.scheduler.pipeline import NoColumnForm, run_column_filters, run_filters
from stratus.scheduler.request import (
    InvalidRequest,
    PlacementQuery,
    RequestSpec,
    query_from_spec,
)
from stratus.storage import engine as db

LOG = logging.getLogger(__name__)
T = TypeVar("T")


class _Sized(Protocol):
    def __len__(self) -> int: ...


C = TypeVar("C", bound=_Sized)   # candidates, as JSON or as a table: how many hosts


@dataclass(frozen=True)
class SchedulerOptions:
    max_placement_results: int = 1000
    max_attempts: int = 3
    host_filters: Sequence[filters.HostFilter] = field(
        default_factory=lambda: filters.resolve(filters.DEFAULT_ORDER))
    request_filters: Sequence[request_filters.RequestFilter] = field(
        default_factory=lambda: request_filters.resolve(request_filters.DEFAULT_ORDER))
    weights: Mapping[str, float] = field(
        default_factory=lambda: dict(weighers.DEFAULT_MULTIPLIERS))
    claim_retries: int = 3
    # Hosts in no availability-zone aggregate are in this zone ([DEFAULT]
    # default_availability_zone), as Nova has it.
    default_zone: str = "nova"
    # Decide in columns when every filter and weigher has a column form ([scheduler]
    # columnar); False: always per host (the reference path).
    columnar: bool = True

    @classmethod
    def from_config(cls, config: configuration.Config) -> SchedulerOptions:
        def get(name: str) -> Any:
            return config.get("scheduler", name)

        try:
            weights = weighers.parse(get("weights"))
            return cls(max_placement_results=get("max_placement_results"),
                       max_attempts=get("max_attempts"),
                       host_filters=filters.resolve(get("enabled_filters")),
                       request_filters=request_filters.resolve(get("request_filters")),
                       weights=weights, claim_retries=get("claim_retries"),
                       default_zone=str(config.get("DEFAULT", "default_availability_zone")),
                       columnar=bool(get("columnar")))
        except ValueError as exc:
            raise configuration.ConfigError(f"[scheduler]: {exc}") from None


def selection(host: HostState, allocation_request: Mapping[str, Any],
              version: str) -> dict[str, Any]:
    return {"host": host.host, "nodename": host.nodename, "compute_node_uuid": host.uuid,
            "cell_uuid": host.cell, "allocation_request": dict(allocation_request),
            "allocation_request_version": version}


class SchedulerManager:
    """The endpoint behind SchedulerRPC (any number of these may run at once)."""

    def __init__(self, placement: pc.PlacementClient, api_engine: Engine,
                 host_manager: HostManager, options: SchedulerOptions | None = None,
                 placement_version: str = "1.39") -> None:
        self.placement = placement
        self.api_engine = api_engine
        self.host_manager = host_manager
        self.options = options or SchedulerOptions()
        self.placement_version = placement_version

    def select_destinations(self, request_spec: dict[str, Any], instance_uuids: list[str],
                            return_alternates: bool = True) -> list[list[dict[str, Any]]]:
        started = time.perf_counter()
        outcome = "error"
        try:
            picks = self._select(request_spec, instance_uuids, return_alternates)
            outcome = "scheduled"
            return picks
        except NoValidHost as exc:
            outcome = "no_valid_host"
            metrics.NO_VALID_HOST.labels(no_valid_host_category.category(exc)).inc()
            raise
        finally:
            metrics.DECISIONS.labels(outcome).inc()
            metrics.DECISION_DURATION.labels(outcome).observe(time.perf_counter() - started)

    def _select(self, request_spec: dict[str, Any], instance_uuids: list[str],
                return_alternates: bool) -> list[list[dict[str, Any]]]:
        try:
            spec = RequestSpec.from_dict(request_spec)
        except InvalidRequest as exc:
            raise _plain(f"The request cannot be scheduled: {exc}", Category.INVALID,
                         len(instance_uuids)) from None
        if not instance_uuids:
            return []
        if self._columnar():
            picks = self._select_in_columns(spec, instance_uuids, return_alternates)
            if picks is not None:
                return picks
        passed, counts = self.feasible_hosts(spec)
        return self._place_all(spec, instance_uuids, HostList(passed, spec, self.options.weights),
                               counts, return_alternates)

    def _columnar(self) -> bool:
        return (self.options.columnar
                and all(f in filters.COLUMN_FORMS for f in self.options.host_filters)
                and all(w in weighers.COLUMN_FORMS for w in self.options.weights))

    def _select_in_columns(self, spec: RequestSpec, instance_uuids: list[str],
                           return_alternates: bool) -> list[list[dict[str, Any]]] | None:
        """The columnar path; None when no host passes the filters (the per-host path then
        asks again and says why in full) or a filter cannot be run in columns."""
        found = self.feasible_columns(spec)
        if found is None:
            return None
        cols, passed, counts = found
        if weighers.needs_counts(self.options.weights):
            cols.count_instances(self.host_manager.instance_counts(set(cols.cell),
                                                                   spec.project_id))
        pool = HostColumnPool(cols, passed, spec, self.options.weights)
        return self._place_all(spec, instance_uuids, pool, counts, return_alternates)

    def feasible_columns(self, spec: RequestSpec
                         ) -> tuple[columns.HostColumns, np.ndarray, Counter[str]] | None:
        """:meth:`feasible_hosts` in columns: the candidates' columns, the indices of the
        hosts that passed, and the rejection counts. None when the per-host path must
        answer: columns are off, a filter has no column form, or nothing passed (its
        NoValidHost words the reasons). A zone's leaf surveys its hosts with this."""
        if not self._columnar():
            return None
        servers = max(spec.num_instances, 1)
        query, view = self._prepare(spec, servers)
        table, params = self._ask(query, view, spec, servers, self._candidate_table)
        if not len(table):
            raise self._nothing_offered(params, self._evidence(spec, query, view))
        located = self.host_manager.locate(table.roots, requested_cell=spec.requested_cell)
        cols = columns.build(table, located, view.host_zones, self.options.default_zone)
        counts = _skipped(located.skipped_cells)
        if len(cols) < len(table):
            counts[_NOT_A_COMPUTE[bool(spec.requested_cell)]] += len(table) - len(cols)
        try:
            passed, report = run_column_filters(cols, spec, self.options.host_filters)
        except NoColumnForm as exc:
            LOG.warning("deciding per host: %s", exc)
            return None
        if not passed.any():
            return None
        counts.update(report.rejected)
        return cols, np.flatnonzero(passed), counts

    def check_rebuild(self, request_spec: dict[str, Any], instance_uuid: str,
                      node_uuid: str) -> None:
        """May the server be rebuilt where it is with its new image (``rebuild.py``)?"""
        try:
            spec = RequestSpec.from_dict(request_spec)
        except InvalidRequest as exc:
            raise NoValidHost(f"The request cannot be scheduled: {exc}") from None
        rebuild.check(self.placement, self.host_manager, spec, self.options.host_filters,
                      instance_uuid, node_uuid)

    def dry_run(self, request_spec: dict[str, Any], count: int = 1) -> dict[str, Any]:
        """Would ``count`` servers of ``request_spec`` fit now, where, and if not why;
        claims nothing (``dry_run.py``)."""
        try:
            spec = RequestSpec.from_dict(request_spec)
        except InvalidRequest as exc:
            return dry_run.answer_invalid(f"The request cannot be scheduled: {exc}", count)
        spec = replace(spec, num_instances=count)
        return dry_run.answer(spec, count, self.feasible_hosts, self.options.weights)

    def feasible_hosts(self, spec: RequestSpec) -> tuple[list[HostState], Counter[str]]:
        """The hosts that can take ``spec`` now (Placement's candidates through the request
        and host filters), unweighed and unclaimed, and the counts of every rejection;
        NoValidHost if there is none. A zone's manager ranks these for its parent."""
        servers = max(spec.num_instances, 1)
        query, view = self._prepare(spec, servers)
        found, params = self._ask(query, view, spec, servers, self._candidates)
        if not found.allocation_requests:
            raise self._nothing_offered(params, self._evidence(spec, query, view))
        by_root = candidate_table.by_root(found.allocation_requests, found.provider_summaries)
        states = self.host_manager.host_states(by_root, requested_cell=spec.requested_cell,
                                               host_zones=view.host_zones)
        for known in states.hosts.values():
            known.availability_zone = known.availability_zone or self.options.default_zone
        counts = _skipped(states.skipped_cells)
        filtered: Counter[str] = Counter()   # the same, for people (cells apart)
        hosts = []
        usage = candidate_table.tree_usage(found.provider_summaries)
        for root, requests in by_root.items():
            state = states.hosts.get(root)
            if state is None:
                why = _NOT_A_COMPUTE[bool(spec.requested_cell)]
                counts[why] += 1
                filtered[why] += 1
                continue
            state.allocation_requests = requests
            _apply_usage(state, usage.get(root, {}))
            hosts.append(state)
        passed, report = run_filters(hosts, spec, self.options.host_filters)
        if passed and weighers.needs_counts(self.options.weights):
            count_instances(passed, self.host_manager.instance_counts(
                {h.cell for h in passed}, spec.project_id))
        errors = {f"error in filter {k}": n for k, n in report.errors.items()}
        counts.update(report.rejected)
        counts.update(errors)
        filtered.update(report.rejected)
        filtered.update(errors)
        if not passed:
            # Why Placement offered no others is part of the answer (a move whose source
            # is the only host with the port's physnet: the source is ignored, and the
            # rest lack the trait).
            body, error = self._explain(params)
            counts.update(explain_counts(body) if body is not None else {})
            base = self._evidence(spec, query, view)
            said = explain(replace(
                base, explain=body, explain_error=error, offered=len(by_root),
                filtered=dict(filtered), skipped_cells=dict(states.skipped_cells),
                disabled=self._disabled_if(body),
                filter_disabled={h.host: h.disabled_reason for h in hosts
                                 if h.service_disabled}))
            raise NoValidHost(f"Placement offered {len(by_root)} host(s); none passed the "
                              "scheduler's checks.", counts, said.details)
        return passed, counts

    def _prepare(self, spec: RequestSpec, servers: int
                 ) -> tuple[PlacementQuery, context.CloudView]:
        """The Placement query for ``spec``, sharpened by the request filters."""
        try:
            query = query_from_spec(spec)
        except InvalidRequest as exc:
            raise _plain(f"The request cannot be scheduled: {exc}", Category.INVALID,
                         servers) from None
        # Outside a transaction, as Placement reads its index: at READ COMMITTED a
        # transaction's second read (the zones' hosts) sees the same as this, and its
        # COMMIT was a round trip per decision.
        with db.read_latest(self.api_engine) as conn:
            view = context.load(conn, self.host_manager.cells.all(), self.options.default_zone)
        try:
            notes = request_filters.apply(spec, query, view.filters, self.options.request_filters)
        except request_filters.NoHostPossible as exc:
            raise _plain(str(exc), Category.CONSTRAINT, servers, query) from None
        query.limit = self.options.max_placement_results
        LOG.debug("candidates query %s (request filters: %s)", query.params(), "; ".join(notes))
        return query, view

    def _ask(self, query: PlacementQuery, view: context.CloudView, spec: RequestSpec,
             servers: int, fetch: Callable[[Sequence[tuple[str, str]], PlacementQuery, int], C]
             ) -> tuple[C, list[tuple[str, str]]]:
        """Placement's candidates (``fetch``: as JSON or as a table) and the query asked."""
        params = query.params()
        found = fetch(params, query, servers)
        cell_aggregate = view.filters.cell_aggregates.get(spec.requested_cell or "")
        if not len(found) and cell_aggregate:
            # A cell's hosts are in its aggregate only if their computes were started with
            # the cell's uuid; ask again unconfined (the host manager still asks that
            # cell alone).
            confined = frozenset({cell_aggregate})
            query.unnumbered.member_of = [m for m in query.unnumbered.member_of
                                          if m != confined]
            params = query.params()
            found = fetch(params, query, servers)
        return found, params

    def _candidates(self, params: Sequence[tuple[str, str]],
                    query: PlacementQuery, servers: int) -> pc.Candidates:
        return self._timed(self.placement.allocation_candidates, params, query, servers)

    def _candidate_table(self, params: Sequence[tuple[str, str]],
                         query: PlacementQuery, servers: int) -> CandidateTable:
        return self._timed(self.placement.candidate_table, params, query, servers)

    def _timed(self, call: Callable[[Sequence[tuple[str, str]]], T],
               params: Sequence[tuple[str, str]], query: PlacementQuery, servers: int) -> T:
        started = time.perf_counter()
        try:
            return call(params)
        except pc.PlacementClientError as exc:
            if exc.status != 400:
                raise
            # The request itself is impossible (an unknown resource class or trait in
            # the flavor or a port's request): nothing any host does will fix it.
            raise _plain(f"Placement refused the request: {exc.detail}"
                         + _who_asked(exc.detail, query), Category.INVALID, servers,
                         query) from None
        finally:
            metrics.CANDIDATES_DURATION.observe(time.perf_counter() - started)

    # ---- choosing and claiming ---------------------------------------------------

    def _place_all(self, spec: RequestSpec, instance_uuids: Sequence[str],
                   hosts: HostPool, counts: Counter[str],
                   return_alternates: bool) -> list[list[dict[str, Any]]]:
        claimed: list[str] = []
        refused: set[str] = set()   # hosts whose claim failed: full for this request
        placed: list[str] = []      # the hosts this request's servers went to, in order
        results = []
        try:
            for instance_uuid in instance_uuids:
                ranked = self._with_group(spec, hosts.ranked(refused), placed)
                chosen = self._claim_best(spec, instance_uuid, ranked, refused, counts, hosts)
                if chosen is None:
                    raise NoValidHost(
                        f"No host could be claimed for instance {instance_uuid} "
                        f"({len(claimed)} of {len(instance_uuids)} placed).", counts,
                        _unclaimable(spec, hosts.offered, hosts.refused(refused), claimed,
                                     len(instance_uuids)))
                host, allocation_request = chosen
                claimed.append(instance_uuid)
                placed.append(host.host)
                hosts.consume(host, instance_uuid)
                picks = [selection(host, allocation_request, self.placement_version)]
                if return_alternates:
                    picks += self._alternates(host, ranked, refused)
                results.append(picks)
        except BaseException:
            for instance_uuid in claimed:   # all or nothing: release what this call claimed
                claims.unclaim(self.placement, instance_uuid)
            raise
        return results

    def _with_group(self, spec: RequestSpec, ranked: Sequence[HostState],
                    placed: list[str]) -> Sequence[HostState]:
        """The ranked hosts a multi-create's next server may take under its server
        group's hard policy, the servers placed before it counting as members (as Nova's
        scheduler adds each selected host to the group's hosts): affinity, the host the
        first went to; anti-affinity, none of theirs."""
        group, enabled = spec.server_group, self.options.host_filters
        if group is None or not placed:
            return ranked
        if group.policy == "affinity" and filters.server_group_affinity in enabled:
            return [h for h in ranked if h.host == placed[0]]
        if group.policy == "anti-affinity" and filters.server_group_anti_affinity in enabled:
            return [h for h in ranked if h.host not in placed]
        return ranked

    def _claim_best(self, spec: RequestSpec, instance_uuid: str, ranked: Sequence[HostState],
                    refused: set[str], counts: Counter[str], hosts: HostPool
                    ) -> tuple[HostState, Mapping[str, Any]] | None:
        for host in ranked:
            for allocation_request in host.allocation_requests:
                outcome = claims.claim(self.placement, instance_uuid, allocation_request,
                                       spec.project_id, spec.user_id,
                                       retries=self.options.claim_retries)
                if outcome.held is not None:
                    # An earlier run of this request (delivered again after its scheduler
                    # died, or asked again) claimed for this instance already.
                    kept = _kept(outcome.held, hosts)
                    if kept is not None:
                        LOG.info("%s keeps the claim an earlier run made on %s",
                                 instance_uuid, kept[0].host)
                        return kept
                    LOG.info("%s: claiming %s over an earlier run's claim", instance_uuid,
                             host.host)
                    outcome = claims.claim(
                        self.placement, instance_uuid, allocation_request, spec.project_id,
                        spec.user_id, consumer_generation=outcome.held.get(
                            "consumer_generation"), retries=self.options.claim_retries)
                if outcome.ok:
                    return host, allocation_request
                LOG.info("claim for %s on %s refused after %d attempt(s): %s", instance_uuid,
                         host.host, outcome.attempts, outcome.reason)
            refused.add(host.uuid)
            counts["claim refused by Placement (taken meanwhile)"] += 1
        return None

    def _alternates(self, chosen: HostState, ranked: Sequence[HostState],
                    refused: set[str]) -> list[dict[str, Any]]:
        """Up to max_attempts - 1 other hosts of the chosen host's cell, best first.

        Same cell, because the instance's record now lives in that cell's database
        and a reschedule only moves its claim and its host there.
        """
        wanted = self.options.max_attempts - 1
        out: list[dict[str, Any]] = []
        seen = {chosen.host}
        for host in ranked:
            if len(out) >= wanted:
                break
            if host.host in seen or host.cell != chosen.cell or host.uuid in refused:
                continue
            seen.add(host.host)
            out.append(selection(host, host.allocation_requests[0], self.placement_version))
        return out

    # ---- why nothing was offered ---------------------------------------------------

    def _explain(self, params: Sequence[tuple[str, str]]
                 ) -> tuple[dict[str, Any] | None, str | None]:
        """Placement's explain answer for the query, or None and why there is none."""
        try:
            return self.placement.explain([p for p in params if p[0] != "limit"]), None
        except pc.PlacementClientError as exc:
            # Explain is a Stratus extension: another Placement (or an older one) lacks it.
            LOG.info("explain unavailable: %s", exc)
            return None, (f"Placement cannot explain why: {exc.status} from "
                          "/allocation_candidates/explain")

    def _evidence(self, spec: RequestSpec, query: PlacementQuery,
                  view: context.CloudView) -> Evidence:
        resources, names = evidence.asked(query)
        return Evidence(servers=max(spec.num_instances, 1), asked=resources,
                        group_names=names, outside=evidence.outside(spec),
                        forbidden=evidence.meanings(view.filters,
                                                    self.host_manager.cells.all(), spec))

    def _disabled_if(self, body: Mapping[str, Any] | None) -> dict[str, str | None]:
        """The disabled computes' reasons, read only when Placement left some out as
        disabled (a read of every enabled cell, on the failure path alone)."""
        if not body or not (body.get("hosts_excluded") or body.get("trees_excluded")
                            or {}).get("root_required"):
            return {}
        try:
            return self.host_manager.disabled_computes()
        except Exception:   # the reasons are a courtesy; the answer stands without them
            LOG.exception("could not read the disabled computes' reasons")
            return {}

    def _nothing_offered(self, params: Sequence[tuple[str, str]],
                         base: Evidence) -> NoValidHost:
        reason = "Placement has no allocation candidates for this request."
        body, error = self._explain(params)
        said = explain(replace(base, explain=body, explain_error=error,
                               disabled=self._disabled_if(body)))
        if body is None:
            return NoValidHost(f"{reason} ({error})", None, said.details)
        return NoValidHost(reason, explain_counts(body), said.details)


def _kept(held: Mapping[str, Any], hosts: HostPool
          ) -> tuple[HostState, Mapping[str, Any]] | None:
    """The host and candidate that exactly match what an instance holds already, if it is
    among the hosts that passed: the same claim as an earlier run's answer."""
    providers = held.get("allocations") or {}
    host = hosts.find(providers)
    if host is None:
        return None
    have = {rp: dict(a["resources"]) for rp, a in providers.items()}
    for request in host.allocation_requests:
        if {rp: dict(a["resources"]) for rp, a in request["allocations"].items()} == have:
            return host, request
    return None


def _skipped(cells: Mapping[str, str]) -> Counter[str]:
    """The counts that start a decision: a cell that could not be read, each."""
    counts: Counter[str] = Counter()
    for cell_uuid, why in cells.items():
        LOG.warning("cell %s skipped while scheduling: %s", cell_uuid, why)
        counts[f"cell {cell_uuid} skipped ({why})"] += 1
    return counts


def _plain(reason: str, category: Category, servers: int,
           query: PlacementQuery | None = None) -> NoValidHost:
    """A request that never reached the hosts, said as such."""
    asked = evidence.asked(query)[0] if query is not None else None
    return NoValidHost(reason, None, plain(reason, category, servers, asked).details)


def _unclaimable(spec: RequestSpec, offered: int, refused_hosts: Sequence[HostState],
                 claimed: Sequence[str], servers: int) -> dict[str, Any]:
    """Why a batch stopped: its own earlier servers on the hosts that refused, or not."""
    ours = set(claimed)
    filled = sum(1 for h in refused_hosts if h.instances & ours)
    query = query_from_spec(spec)
    resources, names = evidence.asked(query)
    return explain(Evidence(servers=servers, asked=resources, group_names=names,
                            offered=offered, placed=len(claimed), batch_hosts=filled,
                            conflicts=len(refused_hosts) - filled)).details


def _who_asked(detail: str, query: PlacementQuery) -> str:
    """Which request groups named the traits or classes Placement does not know (a port's
    group names its port: no host has ever reported such a trait)."""
    names = set(re.findall(r"[A-Z][A-Z0-9_]+", detail))
    askers = []
    for suffix, group in sorted(query.groups.items()):
        unknown = sorted(names & (group.required | group.forbidden | set(group.resources)))
        if not unknown:
            continue
        who = f"{group.requester()}'s request group {suffix}" if group.requester_id \
            else (f"request group {suffix}" if suffix else "the flavor")
        askers.append(f"{who} asks for {', '.join(unknown)}")
    return f" ({'; '.join(askers)}; no host offers it)" if askers else ""


def explain_counts(body: Mapping[str, Any]) -> dict[str, int]:
    """Placement's explain answer as reason -> count (providers per group, then hosts)."""
    counts: Counter[str] = Counter()
    for suffix, group in (body.get("groups") or {}).items():
        where = "placement" if not suffix else f"placement group {suffix}"
        for reason, n in (group.get("providers_excluded") or {}).items():
            counts[f"{where}: {reason} (providers)"] += int(n)
    for reason, n in (body.get("trees_excluded") or {}).items():
        counts[f"placement: {reason} (hosts)"] += int(n)
    return dict(counts)


def count_instances(hosts: Sequence[HostState], counts: columns.InstanceCounts) -> None:
    """The servers already on each host ((cell, host) -> (all, the project's))."""
    for state in hosts:
        state.instance_count, state.project_instance_count = counts.get(
            (state.cell, state.host), (0, 0))


def _apply_usage(state: HostState, totals: candidate_table.Usage) -> None:
    """Placement's capacity and usage for the host's tree replace the cell's figures
    (Placement is the book of record; the cell's compute_nodes row may lag)."""
    vcpu, memory, disk = totals.get("VCPU"), totals.get("MEMORY_MB"), totals.get("DISK_GB")
    if vcpu is not None:
        state.vcpus_total, state.vcpus_used = vcpu
    if memory is not None:
        state.memory_mb_total, state.memory_mb_used = memory
    if disk is not None:
        state.disk_gb_total, state.disk_gb_used = disk


def _overlay_usage(state: HostState, root: str,
                   summaries: Mapping[str, Mapping[str, Any]]) -> None:
    """One host's overlay (tests); select_destinations computes every tree at once."""
    _apply_usage(state, candidate_table.tree_usage(summaries).get(root, {}))


# Why a host Placement offered has no state (indexed by "the request names a cell").
_NOT_A_COMPUTE = ("not a compute node of an enabled cell",
                  "not a compute node of the requested cell")


class HostPool(Protocol):
    """The hosts that passed the filters, as ``_place_all`` draws on them."""

    offered: int

    def ranked(self, refused: set[str]) -> Sequence[HostState]: ...
    def consume(self, host: HostState, instance_uuid: str) -> None: ...
    def refused(self, refused: set[str]) -> list[HostState]: ...
    def find(self, providers: Iterable[str]) -> HostState | None: ...


class HostList:
    """Per host: HostStates weighed one by one (the reference path)."""

    def __init__(self, hosts: list[HostState], spec: RequestSpec,
                 weights: Mapping[str, float]) -> None:
        self.hosts, self.spec, self.weights = hosts, spec, weights
        self.offered = len(hosts)

    def ranked(self, refused: set[str]) -> Sequence[HostState]:
        return [w.host for w in weighers.weigh(
            [h for h in self.hosts if h.uuid not in refused], self.spec, self.weights)]

    def consume(self, host: HostState, instance_uuid: str) -> None:
        flavor = self.spec.flavor
        host.consume(flavor.vcpus, flavor.memory_mb, flavor.disk_gb, instance_uuid)

    def refused(self, refused: set[str]) -> list[HostState]:
        return [h for h in self.hosts if h.uuid in refused]

    def find(self, providers: Iterable[str]) -> HostState | None:
        """The host whose root (compute node) is one of ``providers``."""
        wanted = set(providers)
        return next((h for h in self.hosts if h.uuid in wanted), None)


class HostColumnPool:
    """In columns: the passing hosts weighed at once, states made as they are read."""

    def __init__(self, cols: columns.HostColumns, passed: np.ndarray, spec: RequestSpec,
                 weights: Mapping[str, float]) -> None:
        self.cols, self.passed, self.spec, self.weights = cols, passed, spec, weights
        self.offered = len(passed)

    def _tried(self, uuids: set[str]) -> list[int]:
        """Indices of these hosts (refused ones: their states were made when tried)."""
        found = (self.cols.index_of(u) for u in uuids)
        return [i for i in found if i is not None]

    def ranked(self, refused: set[str]) -> Sequence[HostState]:
        hosts = self.passed
        if refused:
            hosts = hosts[~np.isin(hosts, self._tried(refused))]
        order = weighers.weigh_columns(self.cols, hosts, self.spec, self.weights)
        return columns.RankedStates(self.cols, order)

    def consume(self, host: HostState, instance_uuid: str) -> None:
        flavor = self.spec.flavor
        self.cols.consume(host, flavor.vcpus, flavor.memory_mb, flavor.disk_gb, instance_uuid)

    def refused(self, refused: set[str]) -> list[HostState]:
        return [self.cols.state(i) for i in self._tried(refused)]

    def find(self, providers: Iterable[str]) -> HostState | None:
        """The passing host whose root (compute node) is one of ``providers``."""
        passing = set(self.passed.tolist())
        for i in self._tried(set(providers)):
            if i in passing:
                return self.cols.state(i)
        return None
