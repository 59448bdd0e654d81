"""The zone manager: one per zone, answering ZoneRPC (design document 003).

::

          top            (no hosts: children only; the API at the top asks it)
         /   \\
       eu     us         (a zone may have hosts of its own and children)
      /  \\
   eu-1  eu-2            (leaves: a Stratus deployment each)

Capabilities flow up: every ``capabilities_interval`` a zone merges its own hosts'
capabilities (a leaf) with its children's fresh ones and posts the result to its parent.
A child that has not posted for ``capabilities_ttl`` seconds is left out until it posts
again.

Requests flow down, answers up: ``select`` asks every child whose capabilities could
match, in parallel, within a budget (each level gives its children 80% of its own, so
its answer is in before its parent stops waiting); a child that does not answer in time
is left out of that answer and reported. Each zone merges its children's best N with
its own and re-ranks (:mod:`stratus.zones.rank`).

The origin (the zone whose API took the boot) records the boot in its local store
before acknowledging it, then selects, records the ranked hosts, and asks the zone of
each host in turn to build, passing the message down the route: each zone passes it
only to its own child. It ends with the server placed (its route recorded, for lookups
and deletes) or failed with every reason. A restarted origin resumes each pending boot
at the attempt it had reached (builds are idempotent by server uuid).

Who may ask what: the bus has verified each message's signature; here the verified
sender's zone (``zone:<zone>/<service>``) must be the receiver's parent for the calls
that flow down, a registered child speaking for itself for ``post_capabilities``, and
the receiver's own zone for boots, deletes and changes to the tree. Anything else is
refused with ``WrongZone`` and logged.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from stratus.bus import Bus, BusError, MessagingTimeout, WrongZone, current_sender
from stratus.config import Config
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db
from stratus.zones import rank
from stratus.zones import store as zstore
from stratus.zones.capabilities import (
    Capabilities,
    CapabilityError,
    Requirement,
    could_match,
    merge,
)
from stratus.zones.leaf import Leaf
from stratus.zones.rpcapi import ZoneError, ZoneRPC
from stratus.zones.signing import zone_of

LOG = logging.getLogger(__name__)
CHILD_SHARE = 0.8      # of a zone's select budget, what its children get
HOP_SLACK = 5.0        # seconds each hop of a routed build adds to its caller's wait


def parse_weights(items: list[str]) -> dict[str, float]:
    """``["ram:1.0", "cpu:0.5"]`` -> {"ram": 1.0, "cpu": 0.5}; ValueError if unknown."""
    out: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition(":")
        try:
            out[name.strip()] = float(value) if value else 1.0
        except ValueError:
            raise ValueError(f"weight {item!r} is not NAME:MULTIPLIER") from None
    rank.check_weighers(out)
    return out


@dataclass(frozen=True)
class ZoneOptions:
    name: str
    parent: str | None = None
    results: int = 10                       # N: the hosts each zone passes up
    weights: Mapping[str, float] = field(default_factory=lambda: {"ram": 1.0, "cpu": 1.0})
    select_timeout: float = 5.0             # the origin's budget for a select
    capabilities_interval: float = 10.0
    capabilities_ttl: float = 30.0
    build_timeout: float = 120.0

    @classmethod
    def from_config(cls, config: Config) -> ZoneOptions:
        return cls(name=str(config.get("zones", "name")),
                   parent=str(config.get("zones", "parent")) or None,
                   results=int(config.get("zones", "results")),
                   weights=parse_weights(list(config.get("zones", "weights"))),
                   select_timeout=float(config.get("zones", "select_timeout")),
                   capabilities_interval=float(config.get("zones", "capabilities_interval")),
                   capabilities_ttl=float(config.get("zones", "capabilities_ttl")),
                   build_timeout=float(config.get("zones", "build_timeout")))


@dataclass
class Selection:
    """What ``select`` found under one zone."""

    hosts: list[rank.Candidate]
    rejected: dict[str, int] = field(default_factory=dict)     # "zone: reason" -> hosts
    skipped: dict[str, str] = field(default_factory=dict)      # zone -> why not asked
    unreachable: dict[str, str] = field(default_factory=dict)  # zone -> why no answer

    def to_dict(self) -> dict[str, Any]:
        return {"hosts": [c.to_dict() for c in self.hosts], "rejected": self.rejected,
                "skipped": self.skipped, "unreachable": self.unreachable}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Selection:
        return cls([rank.Candidate.from_dict(c) for c in data.get("hosts") or ()],
                   {str(k): int(v) for k, v in (data.get("rejected") or {}).items()},
                   {str(k): str(v) for k, v in (data.get("skipped") or {}).items()},
                   {str(k): str(v) for k, v in (data.get("unreachable") or {}).items()})

    def reasons(self) -> list[str]:
        """Why hosts or zones were left out, one line each."""
        out = [f"zone {z} not asked: {why}" for z, why in sorted(self.skipped.items())]
        out += [f"zone {z} left out: {why}" for z, why in sorted(self.unreachable.items())]
        out += [f"{why}: {n} host(s)" for why, n in sorted(self.rejected.items())]
        return out


class ZoneManager:
    def __init__(self, options: ZoneOptions, engine: Engine, bus: Bus,
                 leaf: Leaf | None = None, clock: Callable[[], float] = time.time) -> None:
        self.options, self.engine, self.bus, self.leaf = options, engine, bus, leaf
        self.name = options.name
        self.clock = clock
        self.client = bus.client(ZoneRPC, timeout=max(options.select_timeout, 1.0))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._boots = concurrent.futures.ThreadPoolExecutor(32, f"zone-{self.name}-boot")
        # Calls to other zones in flight (fan-outs, lookups): kept, not made per request;
        # its threads only wait on replies.
        self._calls = concurrent.futures.ThreadPoolExecutor(64, f"zone-{self.name}-call")
        self._parent_ok: bool | None = None
        self._stale: set[str] = set()

    # ---- running ----------------------------------------------------------------------

    def start(self) -> None:
        """Serve ZoneRPC, post capabilities now and then periodically, resume boots."""
        self.server = self.bus.serve(ZoneRPC, self, server=self.name)
        thread = threading.Thread(target=self._post_loop, name=f"zone-{self.name}-caps",
                                  daemon=True)
        thread.start()
        self._threads.append(thread)
        with db.read(self.engine) as conn:
            pending = zstore.pending(conn)
        for req in pending:
            LOG.info("zone %s: resuming boot %s", self.name, req.uuid)
            self._boots.submit(self._run_boot, req.uuid)

    def stop(self) -> None:
        self._stop.set()
        server = getattr(self, "server", None)
        if server is not None:
            server.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        self._boots.shutdown(wait=True, cancel_futures=False)
        self._calls.shutdown(wait=True, cancel_futures=True)

    def _post_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.post_now()
            except Exception:  # the loop must outlive one bad pass
                LOG.exception("zone %s: cannot post capabilities", self.name)
            self._stop.wait(self.options.capabilities_interval)

    def post_now(self) -> None:
        """Post this zone's capabilities to its parent (nothing for the top)."""
        parent = self.options.parent
        if parent is None:
            return
        caps = self.capabilities()
        client = self.client.prepare(server=parent,
                                     timeout=max(1.0, min(self.options.capabilities_interval,
                                                          5.0)))
        try:
            client.call("post_capabilities", zone=self.name, capabilities=caps.to_dict())
        except (BusError, ZoneError) as exc:
            if self._parent_ok is not False:
                LOG.warning("zone %s: parent %s did not take its capabilities: %s",
                            self.name, parent, exc)
            self._parent_ok = False
            return
        if self._parent_ok is False:
            LOG.info("zone %s: parent %s takes its capabilities again", self.name, parent)
        self._parent_ok = True

    # ---- capabilities -----------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        """This zone's own hosts and its fresh children's, merged."""
        now = self.clock()
        parts = [self.leaf.capabilities(now)] if self.leaf is not None else []
        with db.read(self.engine) as conn:
            children = zstore.children(conn)
        parts += [c.capabilities for c in children
                  if c.capabilities is not None and c.fresh(now, self.options.capabilities_ttl)]
        return merge(self.name, parts, now)

    def post_capabilities(self, zone: str, capabilities: dict[str, Any]) -> bool:
        sender = self._sender_zone("post_capabilities")
        if sender != zone:
            self._refuse(f"capabilities for zone {zone} from a sender of zone {sender}")
        try:
            caps = Capabilities.from_dict(capabilities)
        except CapabilityError as exc:
            raise ZoneError(f"zone {self.name}: capabilities from {zone} refused: {exc}") \
                from None
        if caps.zone != zone:
            self._refuse(f"zone {zone} posted capabilities naming zone {caps.zone}")
        now = self.clock()
        try:
            with db.write(self.engine) as conn:
                zstore.save_capabilities(conn, zone, caps, now)
        except zstore.NoSuchChild:
            LOG.warning("zone %s: capabilities from %s, which is not its child, refused "
                        "(stratus zone add %s --zone %s registers it)", self.name, zone, zone,
                        self.name)
            raise ZoneError(f"zone {zone} is not a child of zone {self.name}") from None
        if zone in self._stale:
            self._stale.discard(zone)
            LOG.info("zone %s: child %s is back (%d host(s))", self.name, zone, caps.hosts)
        return True

    # ---- selecting --------------------------------------------------------------------

    def select(self, request: dict[str, Any], n: int, budget: float) -> dict[str, Any]:
        self._from_parent("select")
        return self.select_here(request, n, budget).to_dict()

    def select_here(self, request: dict[str, Any], n: int, budget: float) -> Selection:
        """The best ``n`` hosts under this zone, each routed from this zone."""
        need = Requirement.from_dict(request.get("requirement") or {})
        now = self.clock()
        found = Selection([])
        ask: list[str] = []
        with db.read(self.engine) as conn:
            children = zstore.children(conn)
        for child in children:
            if child.capabilities is None:
                found.skipped[child.name] = "has not posted its capabilities"
            elif not child.fresh(now, self.options.capabilities_ttl):
                assert child.received_at is not None
                found.skipped[child.name] = (f"no capabilities for "
                                             f"{now - child.received_at:.0f}s")
                if child.name not in self._stale:
                    self._stale.add(child.name)
                    LOG.warning("zone %s: child %s has not posted for %.0fs; left out until "
                                "it does", self.name, child.name, now - child.received_at)
            elif (why := could_match(child.capabilities, need)) is not None:
                found.skipped[child.name] = why
            else:
                ask.append(child.name)
        pending = self._scatter(ask, budget, "select", request=request, n=n,
                                budget=budget * CHILD_SHARE)
        hosts: list[rank.Candidate] = []
        if self.leaf is not None:
            own, rejected = self.leaf.candidates(request, n, dict(self.options.weights))
            hosts += own
            found.rejected.update(rejected)
        if ask:
            for name, outcome in self._gather(pending, budget).items():
                if isinstance(outcome, MessagingTimeout):
                    found.unreachable[name] = f"did not answer within {budget:g}s"
                    LOG.warning("zone %s: child %s did not answer a select within %gs",
                                self.name, name, budget)
                elif isinstance(outcome, Exception):
                    found.unreachable[name] = f"{type(outcome).__name__}: {outcome}"
                else:
                    answer = Selection.from_dict(outcome)
                    hosts += [c.via(self.name) for c in answer.hosts]
                    found.rejected.update(answer.rejected)
                    found.skipped.update(answer.skipped)
                    found.unreachable.update(answer.unreachable)
        found.hosts = rank.best(hosts, self.options.weights, n)
        return found

    def _scatter(self, zones: list[str], timeout: float, method: str, **args: Any
                 ) -> dict[str, concurrent.futures.Future[Any]]:
        """Call ``method`` on each zone at once (answers: :meth:`_gather`)."""
        client = self.client.prepare(timeout=timeout)
        return {zone: self._calls.submit(client.prepare(server=zone).call, method, **args)
                for zone in zones}

    def _gather(self, calls: dict[str, concurrent.futures.Future[Any]], timeout: float
                ) -> dict[str, Any]:
        """Each zone's answer, or the exception it raised (a timeout for one whose call
        could not even start in time)."""
        concurrent.futures.wait(calls.values(), timeout=timeout + 1.0)
        out: dict[str, Any] = {}
        for zone, future in calls.items():
            if not future.done():
                future.cancel()
                out[zone] = MessagingTimeout("zone", "zone", zone, "select", timeout)
            elif future.exception() is not None:
                out[zone] = future.exception()
            else:
                out[zone] = future.result()
        return out

    # ---- routed to the leaf that holds a host or server -------------------------------

    def build(self, request: dict[str, Any], host: str, route: list[str]) -> dict[str, Any]:
        self._from_parent("build")
        return self._build(request, host, route)

    def show(self, uuid: str, route: list[str]) -> dict[str, Any] | None:
        self._from_parent("show")
        return self._show(uuid, route)

    def delete(self, uuid: str, route: list[str]) -> bool:
        self._from_parent("delete")
        return self._delete(uuid, route)

    def servers(self, uuids: list[str], route: list[str]) -> list[dict[str, Any]]:
        self._from_parent("servers")
        return self._servers(uuids, route)

    def _next_hop(self, route: list[str]) -> str | None:
        """The child to pass a routed message to; None if it is for this zone."""
        if not route or route[0] != self.name:
            raise ZoneError(f"zone {self.name}: a message routed along "
                            f"{'/'.join(route) or '(nothing)'} reached it")
        return route[1] if len(route) > 1 else None

    def _my_leaf(self) -> Leaf:
        if self.leaf is None:
            raise ZoneError(f"zone {self.name} has no hosts of its own")
        return self.leaf

    def _build(self, request: dict[str, Any], host: str, route: list[str]) -> dict[str, Any]:
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().build(request, host, deadline=request.get("deadline"))
        wait = float(request.get("deadline") or 0) - self.clock() + HOP_SLACK * len(route)
        return dict(self.client.prepare(server=hop, timeout=max(wait, 1.0)).call(
            "build", request=request, host=host, route=route[1:]))

    def _show(self, uuid: str, route: list[str]) -> dict[str, Any] | None:
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().show(uuid)
        found = self.client.prepare(server=hop).call("show", uuid=uuid, route=route[1:])
        return dict(found) if found is not None else None

    def _delete(self, uuid: str, route: list[str]) -> bool:
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().delete(uuid)
        return bool(self.client.prepare(server=hop).call("delete", uuid=uuid,
                                                         route=route[1:]))

    def _servers(self, uuids: list[str], route: list[str]) -> list[dict[str, Any]]:
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().servers(uuids)
        return list(self.client.prepare(server=hop).call("servers", uuids=uuids,
                                                         route=route[1:]))

    def flavors(self) -> list[dict[str, Any]]:
        sender = self._sender_zone("flavors")
        if sender not in (self.name, self.options.parent):
            self._refuse(f"flavors asked by zone {sender}")
        return self.all_flavors()

    def all_flavors(self) -> list[dict[str, Any]]:
        """Every leaf's flavors below this zone (the first zone to define an id wins)."""
        found: dict[str, dict[str, Any]] = {}
        if self.leaf is not None:
            found.update({f["flavorid"]: f for f in self.leaf.flavors()})
        now = self.clock()
        with db.read(self.engine) as conn:
            ask = [c.name for c in zstore.children(conn)
                   if c.fresh(now, self.options.capabilities_ttl)]
        timeout = self.client.timeout
        answers = self._gather(self._scatter(ask, timeout, "flavors"), timeout)
        for child, outcome in sorted(answers.items()):
            if isinstance(outcome, Exception):
                LOG.warning("zone %s: no flavors from %s: %s", self.name, child, outcome)
                continue
            for f in outcome:
                found.setdefault(f["flavorid"], f)
        return sorted(found.values(), key=lambda f: (f["memory_mb"], f["flavorid"]))

    # ---- the origin of boots ----------------------------------------------------------

    def boot(self, request: dict[str, Any]) -> dict[str, Any]:
        self._from_own_zone("boot")
        return self.accept(request)

    def accept(self, request: dict[str, Any]) -> dict[str, Any]:
        """Record a boot durably, start it, and say where it stands."""
        missing = [k for k in ("uuid", "name", "flavor", "project_id") if not request.get(k)]
        if missing:
            raise ZoneError(f"a boot needs {', '.join(missing)}")
        uuid = str(request["uuid"])
        with db.write(self.engine) as conn:
            new = zstore.accept(conn, uuid, dict(request))
        if new:
            self._boots.submit(self._run_boot, uuid)
        out = self.status_of(uuid)
        assert out is not None
        return out

    def status(self, uuid: str) -> dict[str, Any] | None:
        self._from_own_zone("status")
        return self.status_of(uuid)

    def status_of(self, uuid: str) -> dict[str, Any] | None:
        with db.read(self.engine) as conn:
            req = zstore.request(conn, uuid)
        if req is None:
            return None
        return {"uuid": uuid, "state": req.state, "request": req.body,
                "created_at": req.created_at.isoformat(), **req.result}

    def _run_boot(self, uuid: str) -> None:
        try:
            self._walk(uuid)
        except Exception as exc:  # never leave an acknowledged boot pending silently
            LOG.exception("zone %s: boot %s failed", self.name, uuid)
            with db.write(self.engine) as conn:
                zstore.finish(conn, uuid, zstore.FAILED,
                              {"reason": f"zone {self.name} could not boot it: {exc}"})

    def _walk(self, uuid: str) -> None:
        with db.read(self.engine) as conn:
            req = zstore.request(conn, uuid)
        if req is None or req.state != zstore.PENDING:
            return
        reasons: list[str] = list(req.result.get("reasons") or [])
        if req.plan is None:
            chosen = self.select_here(req.body, self.options.results,
                                      self.options.select_timeout)
            reasons = chosen.reasons()
            if not chosen.hosts:
                self._fail(uuid, str(NoValidHost("No zone offered a host.")), reasons)
                return
            plan = [c.to_dict() for c in chosen.hosts]
            with db.write(self.engine) as conn:
                zstore.plan(conn, uuid, plan, reasons)
            start = 0
        else:
            plan, start = req.plan, req.attempt
        failures: list[str] = []
        for index in range(start, len(plan)):
            candidate = rank.Candidate.from_dict(plan[index])
            if index > start:   # the plan (or the restart) already says where it is
                with db.write(self.engine) as conn:
                    zstore.attempt(conn, uuid, index, reasons + failures)
            outcome = self._try(req.body, candidate)
            if outcome.get("ok"):
                self._placed(uuid, req.body, candidate, reasons + failures)
                return
            failures.append(str(outcome.get("reason") or "failed"))
        self._fail(uuid, str(NoValidHost(f"Tried {len(plan)} host(s); none could build "
                                         "it.")), reasons + failures)

    def _try(self, body: dict[str, Any], candidate: rank.Candidate) -> dict[str, Any]:
        request = dict(body, deadline=self.clock() + self.options.build_timeout)
        where = f"{candidate.zone}/{candidate.host}"
        try:
            return self._build(request, candidate.host, list(candidate.route))
        except MessagingTimeout:
            # The leaf refuses a build past its deadline, so nothing is left behind once
            # the delete below (or the leaf's own clean-up) has run.
            self._quietly_delete(str(body["uuid"]), list(candidate.route))
            late = candidate.route[1] if len(candidate.route) > 1 else candidate.zone
            return {"ok": False, "reason": f"{where}: zone {late} did not answer in time"}
        except (BusError, ZoneError) as exc:
            return {"ok": False, "reason": f"{where}: {exc}"}

    def _quietly_delete(self, uuid: str, route: list[str]) -> None:
        try:
            self._delete(uuid, route)
        except Exception as exc:
            LOG.warning("zone %s: could not clean up %s along %s: %s", self.name, uuid,
                        "/".join(route), exc)

    def _placed(self, uuid: str, body: dict[str, Any], c: rank.Candidate,
                reasons: list[str]) -> None:
        with db.write(self.engine) as conn:
            cancelled = zstore.is_cancelled(conn, uuid)
            if not cancelled:
                zstore.place(conn, uuid, list(c.route), c.host, str(body["project_id"]))
            zstore.finish(conn, uuid, zstore.FAILED if cancelled else zstore.DONE,
                          {"zone": c.zone, "host": c.host, "route": list(c.route),
                           "reasons": reasons}
                          if not cancelled else {"reason": "deleted while building"})
        if cancelled:
            self._quietly_delete(uuid, list(c.route))
        else:
            LOG.info("zone %s: server %s is on %s in zone %s", self.name, uuid, c.host, c.zone)

    def _fail(self, uuid: str, reason: str, reasons: list[str]) -> None:
        LOG.warning("zone %s: boot %s failed: %s (%s)", self.name, uuid, reason,
                    "; ".join(reasons) or "no detail")
        with db.write(self.engine) as conn:
            zstore.finish(conn, uuid, zstore.FAILED, {"reason": reason, "reasons": reasons})

    # ---- servers, for the API ---------------------------------------------------------

    def server_show(self, uuid: str) -> dict[str, Any] | None:
        self._from_own_zone("server_show")
        return self.find(uuid)

    def find(self, uuid: str) -> dict[str, Any] | None:
        """A server as the API shows it: ``{"state": "placed", "server"}`` from its leaf,
        ``{"state": "pending" | "failed", ...}`` while the origin holds it, or
        ``{"state": "unknown"}`` when its zone does not answer."""
        with db.read(self.engine) as conn:
            route = zstore.locate(conn, uuid)
        if route is None:
            status = self.status_of(uuid)
            if status is None or status["state"] == zstore.DONE or \
                    status.get("reason") == "deleted while building":
                return None   # never booted here, or deleted
            return status
        try:
            server = self._show(uuid, route)
        except (BusError, ZoneError) as exc:
            return {"uuid": uuid, "state": "unknown", "reason": str(exc)}
        return {"uuid": uuid, "state": "placed", "server": server} if server else None

    def server_delete(self, uuid: str) -> bool:
        self._from_own_zone("server_delete")
        return self.remove(uuid)

    def remove(self, uuid: str) -> bool:
        with db.read(self.engine) as conn:
            route = zstore.locate(conn, uuid)
        if route is not None:
            self._delete(uuid, route)   # a zone that does not answer: the caller sees why
            with db.write(self.engine) as conn:
                zstore.forget(conn, uuid)
                zstore.drop_request(conn, uuid)
            return True
        with db.write(self.engine) as conn:
            if zstore.cancel(conn, uuid):
                return True
            return zstore.drop_request(conn, uuid)

    def server_list(self, project_id: str | None) -> list[dict[str, Any]]:
        self._from_own_zone("server_list")
        return self.everything(project_id)

    def everything(self, project_id: str | None) -> list[dict[str, Any]]:
        with db.read(self.engine) as conn:
            by_route = zstore.located(conn, project_id)
            unplaced = zstore.unplaced(conn, project_id)
        out: list[dict[str, Any]] = []
        futures = {self._calls.submit(self._servers, uuids, route.split("/")): uuids
                   for route, uuids in by_route.items()}
        for future, uuids in futures.items():
            try:
                out += [{"uuid": s["uuid"], "state": "placed", "server": s}
                        for s in future.result()]
            except (BusError, ZoneError) as exc:
                out += [{"uuid": u, "state": "unknown", "reason": str(exc)} for u in uuids]
        out += [dict(r.result, uuid=r.uuid, state=r.state, request=r.body,
                     created_at=r.created_at.isoformat()) for r in unplaced]
        return out

    # ---- the tree ---------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        self._sender_zone("describe")
        return self.description()

    def description(self) -> dict[str, Any]:
        now = self.clock()
        with db.read(self.engine) as conn:
            children = zstore.children(conn)
            pending = len(zstore.pending(conn))
            placed = zstore.count_placed(conn)
        return {
            "name": self.name, "parent": self.options.parent,
            "has_hosts": self.leaf is not None, "results": self.options.results,
            "weights": dict(self.options.weights),
            "capabilities": self.capabilities().to_dict(),
            "children": [{
                "name": c.name,
                "state": ("never posted" if c.received_at is None else
                          "fresh" if c.fresh(now, self.options.capabilities_ttl) else
                          "stale"),
                "age": None if c.received_at is None else round(now - c.received_at, 1),
                "capabilities": c.capabilities.to_dict() if c.capabilities else None}
                for c in children],
            "pending_boots": pending, "servers_placed": placed,
        }

    def add_child(self, name: str) -> bool:
        self._from_own_zone("add_child")
        if name == self.name or not name:
            raise ZoneError(f"zone {self.name} cannot be its own child")
        with db.write(self.engine) as conn:
            return zstore.add_child(conn, name)

    def remove_child(self, name: str) -> bool:
        self._from_own_zone("remove_child")
        with db.write(self.engine) as conn:
            return zstore.remove_child(conn, name)

    # ---- who is asking ----------------------------------------------------------------

    def _sender_zone(self, what: str) -> str:
        sender = current_sender() or ""
        zone = zone_of(sender)
        if zone is None:
            self._refuse(f"{what} from '{sender}', which is no zone's service")
        assert zone is not None
        return zone

    def _from_parent(self, what: str) -> None:
        zone = self._sender_zone(what)
        if zone != self.options.parent:
            self._refuse(f"{what} from zone {zone}; only its parent "
                         f"({self.options.parent or 'none: it is the top'}) may ask")

    def _from_own_zone(self, what: str) -> None:
        zone = self._sender_zone(what)
        if zone != self.name:
            self._refuse(f"{what} from zone {zone}; only zone {self.name}'s own services "
                         "may ask")

    def _refuse(self, why: str) -> None:
        LOG.warning("zone %s refused %s (sender %s)", self.name, why, current_sender())
        raise WrongZone(f"zone {self.name} refused {why}")
