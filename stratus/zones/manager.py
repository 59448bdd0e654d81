"""The zone manager: one per zone, answering ZoneRPC (design document 003).

::

          top            (no hosts: children only; the API at the top asks it)
         /   \\
       eu     us         (a zone may have hosts of its own and children)
      /  \\
   eu-1  eu-2            (leaves: a Stratus deployment each)

Capabilities flow up: every ``capabilities_interval`` a zone merges its own hosts'
capabilities (a leaf) with its children's fresh ones and posts the result to its parent,
with the weighers it ranks with. A child that has not posted for ``capabilities_ttl``
seconds is left out until it posts again; a child whose weighers differ from this
zone's is refused (a tree that weighs differently at two levels no longer picks what one
scheduler would).

Requests flow down, answers up: a selection's two passes (``selection.py``), compute
API requests routed to the leaf that holds a server (``api``) or sent to every leaf
(``api_all``), lookups and counts. The origin of boots (the top, whose API takes them)
is ``origin.py``.

Who may ask what (``WHO_MAY``): the bus has verified each message's signature and its
arguments' types; here the verified sender (``zone:<zone>/<service>``) must be the
receiver's parent's manager for what flows down, a registered child's manager for
``post_capabilities`` (of itself), the zone's own API for boots and servers, the zone's
own CLI for changes to the tree. Anything else is refused with ``WrongZone``, and every
refusal is logged at WARNING with its sender.
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
from stratus.scheduler import weighers
from stratus.storage import engine as db
from stratus.zones import store as zstore
from stratus.zones import wire
from stratus.zones.capabilities import Capabilities, CapabilityError, merge
from stratus.zones.leaf import Leaf
from stratus.zones.rpcapi import ZoneError, ZoneRPC
from stratus.zones.selection import CHILD_SHARE, Selector
from stratus.zones.signing import zone_of

LOG = logging.getLogger(__name__)
HOP_SLACK = 5.0        # seconds each hop of a routed call adds to its caller's wait

# Who may send each message: "parent" (the parent zone's manager), "child" (a registered
# child's manager), "api" / "cli" (this zone's own compute API / operators' CLI), "any"
# (any verified zone service: describe is read-only).
WHO_MAY: dict[str, frozenset[str]] = {
    "post_capabilities": frozenset({"child"}),
    **{m: frozenset({"parent"}) for m in ("survey", "rank", "api", "api_all", "settle",
                                           "withdraw", "find", "usage")},
    "flavors": frozenset({"parent", "api"}),
    **{m: frozenset({"api"}) for m in ("boot", "server_api", "server_delete", "server_list",
                                        "tree_usage")},
    "status": frozenset({"api", "cli"}),
    "describe": frozenset({"any"}),
    "add_child": frozenset({"cli"}),
    "remove_child": frozenset({"cli"}),
}


def parse_weights(items: list[str]) -> dict[str, float]:
    """The weighers a tree ranks with: ``[scheduler] weights``, declared once for a
    zone's own scheduler and its ranking across the tree (ValueError if unknown)."""
    return weighers.parse(items)


@dataclass(frozen=True)
class ZoneOptions:
    name: str
    parent: str | None = None
    results: int = 10                       # N: the hosts each zone passes up
    weights: Mapping[str, float] = field(default_factory=lambda: dict(
        weighers.DEFAULT_MULTIPLIERS))
    select_timeout: float = 5.0             # the origin's budget for each pass
    capabilities_interval: float = 10.0
    capabilities_ttl: float = 30.0
    build_timeout: float = 120.0

    @classmethod
    def from_config(cls, config: Config) -> ZoneOptions:
        if list(config.get("zones", "weights")):
            raise ValueError("[zones] weights is gone: a zone tree ranks with the flat "
                             "scheduler's weighers; set [scheduler] weights (the same in "
                             "every zone) instead")
        return cls(name=str(config.get("zones", "name")),
                   parent=str(config.get("zones", "parent")) or None,
                   results=int(config.get("zones", "results")),
                   weights=parse_weights(list(config.get("scheduler", "weights"))),
                   select_timeout=float(config.get("zones", "select_timeout")),
                   capabilities_interval=float(config.get("zones", "capabilities_interval")),
                   capabilities_ttl=float(config.get("zones", "capabilities_ttl")),
                   build_timeout=float(config.get("zones", "build_timeout")))


def same_weights(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Whether two declarations weigh alike (a zero multiplier is no weigher)."""
    return {k: float(v) for k, v in a.items() if v} == {k: float(v) for k, v in b.items()
                                                        if v}


def shown_weights(weights: Mapping[str, float]) -> str:
    return ", ".join(f"{k}:{v:g}" for k, v in sorted(weights.items()) if v) or "none"


class ZoneManager:
    def __init__(self, options: ZoneOptions, engine: Engine, bus: Bus,
                 leaf: Leaf | None = None, clock: Callable[[], float] = time.time) -> None:
        self.options, self.engine, self.bus, self.leaf = options, engine, bus, leaf
        self.name = options.name
        self.clock = clock
        self.client = bus.client(ZoneRPC, timeout=max(options.select_timeout, 1.0))
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # Calls to other zones in flight (fan-outs, lookups): kept, not made per request;
        # its threads only wait on replies.
        self._calls = concurrent.futures.ThreadPoolExecutor(64, f"zone-{self.name}-call")
        self._parent_ok: bool | None = None
        self._stale: set[str] = set()
        # child -> why its last post was refused (left out of every request until fixed)
        self.refused_children: dict[str, str] = {}
        # child -> what it did not answer in time (left out until it posts again)
        self.silent_children: dict[str, str] = {}
        self.selector = Selector(self)
        from stratus.zones.origin import Origin

        self.origin = Origin(self)
        if leaf is not None and not same_weights(leaf.weights, options.weights):
            LOG.warning("zone %s: its deployment's scheduler weighs with %s but the zone "
                        "with %s: give both the same [scheduler] weights", self.name,
                        shown_weights(leaf.weights), shown_weights(options.weights))

    @property
    def weights(self) -> Mapping[str, float]:
        return self.options.weights

    # ---- running ----------------------------------------------------------------------

    def start(self) -> None:
        """Serve ZoneRPC, post capabilities now and then periodically, resume boots."""
        self.server = self.bus.serve(ZoneRPC, self, server=self.name, max_inflight=64)
        thread = threading.Thread(target=self._post_loop, name=f"zone-{self.name}-caps",
                                  daemon=True)
        thread.start()
        self._threads.append(thread)
        self.origin.resume()

    def stop(self) -> None:
        self._stop.set()
        server = getattr(self, "server", None)
        if server is not None:
            server.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        self.origin.stop()
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
        """This zone's own hosts and its fresh children's, merged, with its weighers."""
        now = self.clock()
        parts = [self.leaf.capabilities(now)] if self.leaf is not None else []
        parts += [c for name, c in self.children_caps(fresh_at=now).items()
                  if name not in self.refused_children]
        return merge(self.name, parts, now, self.options.weights)

    def children_caps(self, fresh_at: float | None = None) -> dict[str, Capabilities]:
        """Each child's last capabilities (only fresh ones when ``fresh_at`` is given)."""
        with db.read(self.engine) as conn:
            children = zstore.children(conn)
        return {c.name: c.capabilities for c in children if c.capabilities is not None
                and (fresh_at is None or c.fresh(fresh_at, self.options.capabilities_ttl))}

    def post_capabilities(self, zone: str, capabilities: dict[str, Any]) -> bool:
        sender = self.check("post_capabilities")
        if sender != zone:
            self._refuse(f"capabilities for zone {zone} from a sender of zone {sender}")
        try:
            caps = Capabilities.from_dict(capabilities)
        except CapabilityError as exc:
            raise self.bad(f"capabilities from {zone}: {exc}") from None
        if caps.zone != zone:
            self._refuse(f"zone {zone} posted capabilities naming zone {caps.zone}")
        why = self._disagrees(zone, caps)
        if why is not None:
            if self.refused_children.get(zone) != why:
                LOG.warning("zone %s: child %s refused: %s", self.name, zone, why)
            self.refused_children[zone] = why
            raise ZoneError(f"zone {self.name} refused the capabilities of {zone}: {why}")
        if self.refused_children.pop(zone, None) is not None:
            LOG.info("zone %s: child %s is taken again", self.name, zone)
        now = self.clock()
        try:
            with db.write(self.engine) as conn:
                zstore.save_capabilities(conn, zone, caps, now)
        except zstore.NoSuchChild:
            LOG.warning("zone %s: capabilities from %s, which is not its child, refused "
                        "(stratus zone add %s --zone %s registers it)", self.name, zone, zone,
                        self.name)
            raise ZoneError(f"zone {zone} is not a child of zone {self.name}") from None
        if zone in self._stale or self.silent_children.pop(zone, None) is not None:
            self._stale.discard(zone)
            LOG.info("zone %s: child %s is back (%d host(s))", self.name, zone, caps.hosts)
        return True

    def _disagrees(self, zone: str, caps: Capabilities) -> str | None:
        """Why a child's post cannot be taken as it is (None: it can)."""
        if not same_weights(caps.weights, self.options.weights):
            return (f"it weighs with {shown_weights(caps.weights)}, this zone with "
                    f"{shown_weights(self.options.weights)}: give every zone of the tree "
                    "the same [scheduler] weights")
        if zone not in caps.leaves and caps.hosts and not caps.leaves:
            return "it names no zone it holds"
        mine = self.children_caps()
        for other, theirs in mine.items():
            if other != zone and caps.leaves & theirs.leaves:
                return (f"it claims zone(s) {', '.join(sorted(caps.leaves & theirs.leaves))}"
                        f" of child {other}")
        if self.leaf is not None and self.name in caps.leaves:
            return f"it claims zone {self.name} itself"
        return None

    def note_stale(self, child: str, age: float) -> None:
        if child not in self._stale:
            self._stale.add(child)
            LOG.warning("zone %s: child %s has not posted for %.0fs; left out until it "
                        "does", self.name, child, age)

    # ---- selecting (selection.py) -----------------------------------------------------

    def survey(self, selection: str, request: dict[str, Any], budget: float
               ) -> dict[str, Any]:
        self.check("survey")
        return self.selector.survey(selection, request, self._budget(budget))

    def rank(self, selection: str, bounds: dict[str, list[float]], n: int, budget: float
             ) -> dict[str, Any]:
        self.check("rank")
        return self.selector.rank(selection, bounds, n, self._budget(budget))

    def _budget(self, budget: float) -> float:
        if not 0 < budget <= 600:
            raise self.bad(f"a budget of {budget:g}s (0 to 600)")
        return budget

    # ---- fan-outs ---------------------------------------------------------------------

    def scatter(self, zones: list[str], timeout: float, method: str, **args: Any
                ) -> dict[str, concurrent.futures.Future[Any]]:
        """Call ``method`` on each zone at once (answers: :meth:`gather`)."""
        client = self.client.prepare(timeout=timeout)
        return {zone: self._calls.submit(client.prepare(server=zone).call, method, **args)
                for zone in zones}

    def gather(self, calls: dict[str, concurrent.futures.Future[Any]], timeout: float,
               method: str = "call") -> dict[str, Any]:
        """Each zone's answer, or the exception it raised (a timeout for one whose call
        could not even start in time)."""
        concurrent.futures.wait(calls.values(), timeout=timeout + 1.0)
        out: dict[str, Any] = {}
        for zone, future in calls.items():
            if not future.done():
                future.cancel()
                out[zone] = MessagingTimeout("zone", "zone", zone, method, timeout)
            elif future.exception() is not None:
                out[zone] = future.exception()
            else:
                out[zone] = future.result()
        return out

    def fresh_children(self) -> list[str]:
        return sorted(n for n in self.children_caps(fresh_at=self.clock())
                      if n not in self.refused_children)

    def distrust(self, child: str, what: str, why: str) -> str:
        """A child answered something that cannot be true or is not the schema: left
        out, and said at WARNING."""
        LOG.warning("zone %s: child %s's %s answer refused: %s", self.name, child, what, why)
        return f"answered what it cannot have: {why}"

    # ---- routed to the leaf that holds a server ---------------------------------------

    def api(self, route: list[str], request: dict[str, Any]) -> dict[str, Any]:
        self.check("api")
        return self.route_api(route, request)

    def route_api(self, route: list[str], request: dict[str, Any],
                  timeout: float | None = None) -> dict[str, Any]:
        try:
            wire.check(request)
        except wire.WireError as exc:
            raise self.bad(str(exc)) from None
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().api_call(request)
        return dict(self.client.prepare(server=hop, timeout=timeout or self.client.timeout)
                    .call("api", route=route[1:], request=request))

    def api_all(self, request: dict[str, Any], budget: float) -> dict[str, Any]:
        self.check("api_all")
        return self.every_leaf(request, self._budget(budget))

    def every_leaf(self, request: dict[str, Any], budget: float) -> dict[str, Any]:
        """``request`` run by every leaf below: ``{"answers": {leaf: answer},
        "unreachable": {zone: why}}``."""
        try:
            wire.check(request)
        except wire.WireError as exc:
            raise self.bad(str(exc)) from None
        answers: dict[str, Any] = {}
        unreachable: dict[str, str] = {}
        calls = self.scatter(self.fresh_children(), budget, "api_all", request=request,
                             budget=budget * CHILD_SHARE)
        if self.leaf is not None:
            answers[self.name] = self.leaf.api_call(request)
        caps = self.children_caps()
        for child, outcome in self.gather(calls, budget, "api_all").items():
            if isinstance(outcome, Exception):
                unreachable[child] = f"{type(outcome).__name__}: {outcome}"
                continue
            held = caps[child].leaves if child in caps else frozenset()
            found = outcome.get("answers") if isinstance(outcome, dict) else None
            lost = outcome.get("unreachable") if isinstance(outcome, dict) else None
            if not isinstance(found, dict) or not isinstance(lost, dict) \
                    or not set(found) <= held or not all(isinstance(v, str)
                                                         for v in lost.values()):
                unreachable[child] = self.distrust(child, "api_all",
                                                   "answers for zones it does not hold, "
                                                   "or not the schema")
                continue
            answers.update(found)
            unreachable.update({str(k): v for k, v in lost.items()})
        return {"answers": answers, "unreachable": unreachable}

    def settle(self, route: list[str], uuid: str, deadline: float) -> dict[str, Any]:
        self.check("settle")
        return self.route_settle(route, uuid, deadline)

    def route_settle(self, route: list[str], uuid: str, deadline: float) -> dict[str, Any]:
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().settle(uuid, deadline)
        wait = deadline - self.clock() + HOP_SLACK * len(route)
        return dict(self.client.prepare(server=hop, timeout=max(wait, 1.0)).call(
            "settle", route=route[1:], uuid=uuid, deadline=deadline))

    def withdraw(self, route: list[str], uuid: str) -> bool:
        self.check("withdraw")
        return self.route_withdraw(route, uuid)

    def route_withdraw(self, route: list[str], uuid: str) -> bool:
        hop = self._next_hop(route)
        if hop is None:
            return self._my_leaf().withdraw(uuid)
        return bool(self.client.prepare(server=hop).call("withdraw", route=route[1:],
                                                         uuid=uuid))

    def find(self, kind: str, ident: str, budget: float) -> list[dict[str, Any]]:
        self.check("find")
        return self.find_below(kind, ident, self._budget(budget))

    def find_below(self, kind: str, ident: str, budget: float) -> list[dict[str, Any]]:
        """Where below this zone a server, port or network is: ``[{"route", ...}]``."""
        if kind not in ("server", "port", "network"):
            raise self.bad(f"find of a {kind!r} (server, port or network)")
        out: list[dict[str, Any]] = []
        calls = self.scatter(self.fresh_children(), budget, "find", kind=kind, ident=ident,
                             budget=budget * CHILD_SHARE)
        if self.leaf is not None:
            here = self.leaf.find(kind, ident)
            if here is not None:
                out.append(dict(here, route=[self.name]))
        for child, outcome in self.gather(calls, budget, "find").items():
            if isinstance(outcome, Exception):
                LOG.info("zone %s: child %s could not look for %s %s: %s", self.name, child,
                         kind, ident, outcome)
                continue
            if not isinstance(outcome, list) or not all(
                    isinstance(f, dict) and isinstance(f.get("route"), list)
                    and f["route"][:1] == [child] for f in outcome):
                self.distrust(child, "find", "not a list of finds routed through it")
                continue
            out += [dict(f, route=[self.name, *f["route"]]) for f in outcome]
        return out

    def usage(self, project_id: str, budget: float) -> dict[str, int]:
        self.check("usage")
        return self.usage_below(project_id, self._budget(budget))

    def usage_below(self, project_id: str, budget: float) -> dict[str, int]:
        """The project's servers, cores and RAM in every leaf below (a child that does not
        answer counts nothing, and is logged)."""
        total = {"instances": 0, "cores": 0, "ram": 0}
        calls = self.scatter(self.fresh_children(), budget, "usage", project_id=project_id,
                             budget=budget * CHILD_SHARE)
        parts: list[Any] = [self.leaf.usage(project_id)] if self.leaf is not None else []
        for child, outcome in self.gather(calls, budget, "usage").items():
            if isinstance(outcome, Exception):
                LOG.warning("zone %s: child %s did not count project %s's servers: %s",
                            self.name, child, project_id, outcome)
                continue
            if not isinstance(outcome, dict) or not all(
                    type(outcome.get(k)) is int and outcome[k] >= 0 for k in total):
                self.distrust(child, "usage", "not whole numbers of instances, cores, ram")
                continue
            parts.append(outcome)
        for part in parts:
            for key in total:
                total[key] += int(part[key])
        return total

    def _next_hop(self, route: list[str]) -> str | None:
        """The child to pass a routed message to; None if it is for this zone."""
        if not route or route[0] != self.name:
            raise self.bad(f"a message routed along {'/'.join(route) or '(nothing)'} "
                           f"reached zone {self.name}")
        if len(route) > 1:
            with db.read(self.engine) as conn:
                children = {c.name for c in zstore.children(conn)}
            if route[1] not in children:
                raise self.bad(f"a message routed to {route[1]}, which is not a child of "
                               f"zone {self.name}")
            return route[1]
        return None

    def _my_leaf(self) -> Leaf:
        if self.leaf is None:
            raise ZoneError(f"zone {self.name} has no hosts of its own")
        return self.leaf

    def flavors(self) -> list[dict[str, Any]]:
        self.check("flavors")
        return self.all_flavors()

    def all_flavors(self) -> list[dict[str, Any]]:
        """Every leaf's flavors below this zone (the first zone to define an id wins)."""
        found: dict[str, dict[str, Any]] = {}
        if self.leaf is not None:
            found.update({f["flavorid"]: f for f in self.leaf.flavors()})
        timeout = self.client.timeout
        answers = self.gather(self.scatter(self.fresh_children(), timeout, "flavors"),
                              timeout, "flavors")
        for child, outcome in sorted(answers.items()):
            if isinstance(outcome, Exception):
                LOG.warning("zone %s: no flavors from %s: %s", self.name, child, outcome)
                continue
            if not isinstance(outcome, list) or not all(
                    isinstance(f, dict) and isinstance(f.get("flavorid"), str)
                    and isinstance(f.get("name"), str) for f in outcome):
                self.distrust(child, "flavors", "not a list of flavors")
                continue
            for f in outcome:
                found.setdefault(f["flavorid"], f)
        return sorted(found.values(), key=lambda f: (f.get("memory_mb", 0), f["flavorid"]))

    # ---- the zone's own services (origin.py) -------------------------------------------

    def boot(self, request: dict[str, Any]) -> dict[str, Any]:
        self.check("boot")
        return self.origin.boot(request)

    def status(self, uuid: str) -> dict[str, Any] | None:
        self.check("status")
        return self.origin.status_of(uuid)

    def server_api(self, uuid: str, request: dict[str, Any]) -> dict[str, Any]:
        self.check("server_api")
        return self.origin.server_api(uuid, request)

    def server_delete(self, uuid: str, request: dict[str, Any]) -> dict[str, Any]:
        self.check("server_delete")
        return self.origin.server_delete(uuid, request)

    def server_list(self, request: dict[str, Any], project_id: str | None
                    ) -> dict[str, Any]:
        self.check("server_list")
        return self.origin.server_list(request, project_id)

    def tree_usage(self, project_id: str) -> dict[str, int]:
        self.check("tree_usage")
        return self.origin.tree_usage(project_id)

    # ---- the tree ---------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        self.check("describe")
        return self.description()

    def description(self) -> dict[str, Any]:
        now = self.clock()
        with db.read(self.engine) as conn:
            children = zstore.children(conn)
            pending = len(zstore.pending(conn))
            placed = zstore.count_placed(conn)

        def state(c: zstore.Child) -> str:
            if c.name in self.refused_children:
                return f"refused: {self.refused_children[c.name]}"
            if c.name in self.silent_children:
                return f"not answering ({self.silent_children[c.name]})"
            if c.received_at is None:
                return "never posted"
            return "fresh" if c.fresh(now, self.options.capabilities_ttl) else "stale"

        return {
            "name": self.name, "parent": self.options.parent,
            "has_hosts": self.leaf is not None, "results": self.options.results,
            "weights": dict(self.options.weights),
            "capabilities": self.capabilities().to_dict(),
            "children": [{
                "name": c.name, "state": state(c),
                "age": None if c.received_at is None else round(now - c.received_at, 1),
                "capabilities": c.capabilities.to_dict() if c.capabilities else None}
                for c in children],
            "pending_boots": pending, "servers_placed": placed,
        }

    def add_child(self, name: str) -> bool:
        self.check("add_child")
        from stratus.zones.tree import check_zone_name

        try:
            check_zone_name(name)
        except ValueError as exc:
            raise self.bad(str(exc)) from None
        if name == self.name:
            raise self.bad(f"zone {self.name} cannot be its own child")
        with db.write(self.engine) as conn:
            return zstore.add_child(conn, name)

    def remove_child(self, name: str) -> bool:
        self.check("remove_child")
        self.refused_children.pop(name, None)
        with db.write(self.engine) as conn:
            return zstore.remove_child(conn, name)

    # ---- who is asking ----------------------------------------------------------------

    def check(self, method: str) -> str:
        """The verified sender's zone, if it may send ``method`` here (else refused)."""
        sender = current_sender() or ""
        zone = zone_of(sender)
        if zone is None:
            self._refuse(f"{method} from '{sender}', which is no zone's service")
        assert zone is not None
        service = sender.rsplit("/", 1)[1]
        allowed = WHO_MAY.get(method, frozenset())
        if "any" in allowed:
            return zone
        if "parent" in allowed and zone == self.options.parent and service == "manager":
            return zone
        if "child" in allowed and service == "manager" and zone != self.name \
                and zone != self.options.parent:
            return zone       # post_capabilities checks that it is a registered child
        if zone == self.name and service in allowed:
            return zone
        if "parent" in allowed:
            self._refuse(f"{method} from {sender}; only its parent's manager "
                         f"({self.options.parent or 'none: it is the top'}) may ask")
        self._refuse(f"{method} from {sender}; only zone {self.name}'s own "
                     f"{' or '.join(sorted(allowed))} may ask")
        raise AssertionError("unreachable")

    def _refuse(self, why: str) -> None:
        LOG.warning("zone %s refused %s (sender %s)", self.name, why, current_sender())
        raise WrongZone(f"zone {self.name} refused {why}")

    def bad(self, why: str) -> ZoneError:
        """A validly signed message whose arguments cannot be acted on: a declared
        refusal, said at WARNING with its sender."""
        LOG.warning("zone %s refused a message from %s: %s", self.name, current_sender(),
                    why)
        return ZoneError(f"zone {self.name} refused: {why}")
