"""A zone's part in a selection's two passes (``stratus.zones.rank`` says why two):

- ``survey``: ask every child whose capabilities could match, within a budget (each
  level gives its children 80% of its own, so its answer is in before its parent stops
  waiting), and this zone's own hosts; answer the weighers' bounds over everything
  that passed below, and why the rest did not;
- ``rank``: with the tree's bounds, this zone's own best ``n`` and its children's,
  merged and weighed again.

What a child answers is checked before it is used: a reply that does not follow the
schema (``null``, wrong types) leaves that child out; a candidate whose route does not
start with the child that offered it, names a zone the child does not hold, or claims
figures the child's capabilities cannot have, leaves that child's whole answer out. A
child holding only its own key can then speak for its own hosts and nothing else.
Every such refusal is logged at WARNING with the child's name.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stratus.bus import MessagingTimeout
from stratus.storage import engine as db
from stratus.zones import rank as ranking
from stratus.zones import store as zstore
from stratus.zones.capabilities import Capabilities, CapabilityError, Requirement, could_match
from stratus.zones.rpcapi import ZoneError

if TYPE_CHECKING:
    from stratus.zones.manager import ZoneManager

LOG = logging.getLogger(__name__)
CHILD_SHARE = 0.8      # of a zone's budget, what its children get
KEPT = 30.0            # seconds a survey's answerers wait for its rank pass


@dataclass
class Selection:
    """What a selection found under one zone."""

    hosts: list[ranking.Candidate]
    rejected: dict[str, int] = field(default_factory=dict)     # "zone: reason" -> hosts
    skipped: dict[str, str] = field(default_factory=dict)      # zone -> why not asked
    unreachable: dict[str, str] = field(default_factory=dict)  # zone -> why no answer

    def reasons(self) -> list[str]:
        """Why hosts or zones were left out, one line each."""
        out = [f"zone {z} not asked: {why}" for z, why in sorted(self.skipped.items())]
        out += [f"zone {z} left out: {why}" for z, why in sorted(self.unreachable.items())]
        out += [f"{why}: {n} host(s)" for why, n in sorted(self.rejected.items())]
        return out


@dataclass
class _Kept:
    children: list[str]          # the children whose survey passed hosts
    project_id: str
    policy: str | None
    expires: float


class Malformed(ValueError):
    """A child's answer that does not follow the schema."""


def _reasons(data: Mapping[str, Any], key: str, value_type: type) -> dict[str, Any]:
    found = data.get(key, {})
    if not isinstance(found, dict) or not all(
            isinstance(k, str) and type(v) is value_type for k, v in found.items()):
        raise Malformed(f"{key} must map names to {value_type.__name__}s")
    return dict(found)


class Selector:
    def __init__(self, manager: ZoneManager) -> None:
        self.m = manager
        self._kept: dict[str, _Kept] = {}
        self._lock = threading.Lock()

    # ---- the origin's selection: both passes --------------------------------------------

    def select(self, request: dict[str, Any], n: int, budget: float) -> Selection:
        """The best ``n`` hosts under this zone for ``request``, each routed from here."""
        selection = str(uuidlib.uuid4())
        surveyed = self.survey(selection, request, budget)
        found = Selection([], surveyed["rejected"], surveyed["skipped"],
                          surveyed["unreachable"])
        if not surveyed["hosts"]:
            self.forget(selection)
            return found
        ranked = self.rank(selection, surveyed["bounds"], n, budget)
        found.hosts = [ranking.Candidate.from_dict(c) for c in ranked["hosts"]]
        found.unreachable.update(ranked["unreachable"])
        return found

    def forget(self, selection: str) -> None:
        with self._lock:
            self._kept.pop(selection, None)

    # ---- survey -----------------------------------------------------------------------

    def survey(self, selection: str, request: dict[str, Any], budget: float
               ) -> dict[str, Any]:
        try:
            need = Requirement.from_dict(request.get("requirement") or {})
        except CapabilityError as exc:
            raise self.m.bad(f"a survey's requirement: {exc}") from None
        project_id, policy = self._who(request)
        self._forget_old()
        ask, skipped = self._routable(need)
        calls = self.m.scatter(ask, budget, "survey", selection=selection, request=request,
                               budget=budget * CHILD_SHARE)
        parts: list[ranking.Bounds] = []
        hosts = 0
        rejected: dict[str, int] = {}
        unreachable: dict[str, str] = {}
        answered: list[str] = []
        if self.m.leaf is not None:
            bounds, count, why = self.m.leaf.survey(selection, request, self.m.weights)
            if count:
                parts.append(bounds)
                hosts += count
            rejected.update(why)
        caps = self.m.children_caps()
        for child, outcome in self.m.gather(calls, budget, "survey").items():
            if isinstance(outcome, Exception):
                unreachable[child] = self._unreachable(child, outcome, "survey", budget)
                continue
            try:
                answer = self._survey_answer(outcome, caps.get(child))
            except Malformed as exc:
                unreachable[child] = self.m.distrust(child, "survey", str(exc))
                continue
            rejected.update(answer["rejected"])
            skipped.update(answer["skipped"])
            unreachable.update(answer["unreachable"])
            if answer["hosts"]:
                parts.append(answer["bounds"])
                hosts += answer["hosts"]
                answered.append(child)
        if hosts:
            with self._lock:
                self._kept[selection] = _Kept(answered, project_id, policy,
                                              time.monotonic() + KEPT)
        return {"bounds": ranking.bounds_to_dict(ranking.merge_bounds(parts)), "hosts": hosts,
                "rejected": rejected, "skipped": skipped, "unreachable": unreachable}

    def _who(self, request: Mapping[str, Any]) -> tuple[str, str | None]:
        project_id = request.get("project_id")
        group = request.get("group")
        if not isinstance(project_id, str) or not project_id:
            raise self.m.bad("a survey needs the request's project_id")
        if group is not None and not (isinstance(group, dict)
                                      and isinstance(group.get("policy"), str)
                                      and isinstance(group.get("uuid"), str)):
            raise self.m.bad("a survey's group must have a uuid and a policy")
        return project_id, group["policy"] if group else None

    def _routable(self, need: Requirement) -> tuple[list[str], dict[str, str]]:
        """The children to ask, and why the others are not asked."""
        now = self.m.clock()
        ask: list[str] = []
        skipped: dict[str, str] = {}
        with db.read(self.m.engine) as conn:
            children = zstore.children(conn)
        for child in children:
            refused = self.m.refused_children.get(child.name)
            silent = self.m.silent_children.get(child.name)
            if refused:
                skipped[child.name] = refused
            elif silent is not None:
                skipped[child.name] = (f"did not answer {silent}; left out until it posts "
                                       "its capabilities again")
            elif child.capabilities is None:
                skipped[child.name] = "has not posted its capabilities"
            elif not child.fresh(now, self.m.options.capabilities_ttl):
                assert child.received_at is not None
                skipped[child.name] = f"no capabilities for {now - child.received_at:.0f}s"
                self.m.note_stale(child.name, now - child.received_at)
            elif (why := could_match(child.capabilities, need)) is not None:
                skipped[child.name] = why
            else:
                ask.append(child.name)
        return ask, skipped

    def _survey_answer(self, data: Any, caps: Capabilities | None) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise Malformed("the answer is not an object")
        hosts = data.get("hosts")
        if type(hosts) is not int or hosts < 0:
            raise Malformed("hosts must be a whole number >= 0")
        try:
            bounds = ranking.bounds_from_dict(data.get("bounds"), self.m.weights)
        except ranking.CandidateError as exc:
            raise Malformed(str(exc)) from None
        if caps is not None and (why := plausible_bounds(bounds, caps)) is not None:
            raise Malformed(why)
        return {"hosts": hosts, "bounds": bounds,
                "rejected": _reasons(data, "rejected", int),
                "skipped": _reasons(data, "skipped", str),
                "unreachable": _reasons(data, "unreachable", str)}

    # ---- rank -------------------------------------------------------------------------

    def rank(self, selection: str, bounds: Mapping[str, Any], n: int, budget: float
             ) -> dict[str, Any]:
        with self._lock:
            kept = self._kept.pop(selection, None)
        try:
            tree_bounds = ranking.bounds_from_dict(dict(bounds), self.m.weights)
        except ranking.CandidateError as exc:
            raise self.m.bad(f"a rank's bounds: {exc}") from None
        if n < 1 or n > 1000:
            raise self.m.bad(f"a rank asks for {n} hosts (1 to 1000)")
        if kept is None:   # never surveyed here (or too long ago): nothing to offer
            return {"hosts": [], "unreachable": {}}
        hosts: list[ranking.Candidate] = []
        if self.m.leaf is not None:
            hosts += self.m.leaf.rank(selection, tree_bounds, n, self.m.weights)
        calls = self.m.scatter(kept.children, budget, "rank", selection=selection,
                               bounds=ranking.bounds_to_dict(tree_bounds), n=n,
                               budget=budget * CHILD_SHARE)
        unreachable: dict[str, str] = {}
        caps = self.m.children_caps()
        for child, outcome in self.m.gather(calls, budget, "rank").items():
            if isinstance(outcome, Exception):
                unreachable[child] = self._unreachable(child, outcome, "rank", budget)
                continue
            try:
                offered = self._rank_answer(child, outcome, caps.get(child), n)
            except Malformed as exc:
                unreachable[child] = self.m.distrust(child, "rank", str(exc))
                continue
            unreachable.update(_reasons(outcome, "unreachable", str))
            hosts += [c.via(self.m.name) for c in offered]
        chosen = ranking.best(hosts, self.m.weights, tree_bounds, n, kept.project_id,
                           kept.policy)
        return {"hosts": [c.to_dict() for c in chosen], "unreachable": unreachable}

    def _rank_answer(self, child: str, data: Any, caps: Capabilities | None,
                     n: int) -> list[ranking.Candidate]:
        """A child's candidates, each checked: routed through the child, in a zone it
        holds, with figures it could have; Malformed (the whole answer out) if not."""
        if not isinstance(data, dict) or not isinstance(data.get("hosts"), list):
            raise Malformed("the answer has no list of hosts")
        if len(data["hosts"]) > n:
            raise Malformed(f"{len(data['hosts'])} hosts offered, {n} asked")
        totals = {rc: c.total for rc, c in caps.resources.items()} if caps else {}
        out = []
        for item in data["hosts"]:
            try:
                c = ranking.Candidate.from_dict(item)
            except ranking.CandidateError as exc:
                raise Malformed(str(exc)) from None
            if not c.route or c.route[0] != child:
                raise Malformed(f"candidate {c.key} is routed along "
                                f"{'/'.join(c.route) or '(nothing)'}, not through {child}")
            if c.route[-1] != c.zone or (caps is not None and c.zone not in caps.leaves):
                raise Malformed(f"candidate {c.key} is in a zone {child} does not hold")
            if (why := ranking.plausible(c, totals)) is not None:
                raise Malformed(why)
            out.append(c)
        return out

    # ---- shared -----------------------------------------------------------------------

    def _unreachable(self, child: str, exc: Exception, what: str, budget: float) -> str:
        if isinstance(exc, MessagingTimeout):
            LOG.warning("zone %s: child %s did not answer a %s within %gs; left out until "
                        "it posts again", self.m.name, child, what, budget)
            # One deadline is what a silent child costs: the selections after this one
            # (each holding the origin's selection lock) do not wait for it again.
            self.m.silent_children[child] = f"a {what} within {budget:g}s"
            return f"did not answer within {budget:g}s"
        if isinstance(exc, ZoneError):
            return str(exc)
        LOG.warning("zone %s: child %s's %s failed: %s: %s", self.m.name, child, what,
                    type(exc).__name__, exc)
        return f"{type(exc).__name__}: {exc}"

    def _forget_old(self) -> None:
        now = time.monotonic()
        with self._lock:
            for key in [k for k, v in self._kept.items() if v.expires < now]:
                del self._kept[key]


def plausible_bounds(bounds: Mapping[str, tuple[float, float]], caps: Capabilities
                     ) -> str | None:
    """None if a child whose capabilities are ``caps`` could have passed hosts with
    these weigher bounds; else what cannot be."""
    limits = {"ram": "MEMORY_MB", "cpu": "VCPU", "disk": "DISK_GB"}
    for name, (lo, hi) in bounds.items():
        rc = limits.get(name)
        if rc is not None:
            have = caps.resources.get(rc)
            if have is None or hi > have.total:
                return f"bounds.{name} up to {hi:g}, more than its {rc} in all"
        elif name == "num_instances" and lo < 0:
            return "bounds.num_instances below 0"
        elif name == "project_spread" and hi > 0:
            return "bounds.project_spread above 0"
        elif name == "affinity" and (lo < -1 or hi > 1):
            return "bounds.affinity outside -1..1"
    return None
