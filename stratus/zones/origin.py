"""The origin of boots: the zone whose compute API takes them (the top of a tree).

A boot request (one API request: one server, or ``max_count`` of them) is recorded in
the local store before anything else, under its batch (the client's request id, when
it sent one: a retried request finds its servers there and makes no others). Then:

1. **Select**, one server at a time (a lock: each selection sees the picks before it):
   both passes down the tree with the tree's *picks in flight* (the hosts chosen for
   servers their leaf has not built yet), which each leaf counts as taken. So
   concurrent boots and a multi-create spread as one flat scheduler spreads, and no
   host is offered twice for room only one server can have. A server no zone offers a
   host fails the whole request (all or nothing, as a flat multi-create).
2. **Create** each server in its leaf through that leaf's own compute API (the first
   try before the API answers, so what the leaf's API refuses, the top refuses with the
   same status and words, and nothing is left behind). Its place is recorded with the
   boot still in flight, in one transaction: a lookup right after the 202 finds it.
3. **Settle**: in the background, wait until the leaf's build ends; on failure take the
   try back completely (``withdraw``: the leaf may build it again under the same uuid)
   and create it on the next host of its ranking, in the same leaf or another; after
   the last, ERROR with every reason.

A restarted origin resumes every boot in flight where its store says it was.

The top's compute API also finds servers here (``server_api``): where the tree put
them, else where a leaf holds one created there directly (found by asking, then
remembered); lists are every leaf's page (``server_list``) plus the boots not in a
leaf; quotas count what every leaf holds (``tree_usage``).
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from stratus.api.ops import images as image_ops
from stratus.api.ops import ports as port_ops
from stratus.bus import BusError, MessagingTimeout
from stratus.network.traits import physnet_trait
from stratus.scheduler.errors import NoValidHost
from stratus.storage import engine as db
from stratus.zones import rank, wire
from stratus.zones import store as zstore
from stratus.zones.capabilities import ANY_IMAGE
from stratus.zones.rpcapi import ZoneError

if TYPE_CHECKING:
    from stratus.zones.manager import ZoneManager

LOG = logging.getLogger(__name__)
DELETED_WHILE_BUILDING = "deleted while building"


@dataclass(frozen=True)
class Pick:
    """A host chosen for a server its leaf has not built yet."""

    uuid: str
    route: tuple[str, ...]
    host: str
    resources: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "zone": self.route[-1], "host": self.host,
                "vcpus": int(self.resources.get("VCPU", 0)),
                "memory_mb": int(self.resources.get("MEMORY_MB", 0)),
                "disk_gb": int(self.resources.get("DISK_GB", 0))}


class Refusal(Exception):
    """The boot is refused before any server exists (status and the compute API's
    words)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status, self.message = status, message


def _text(data: Mapping[str, Any], key: str, optional: bool = False) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} must be a non-empty string")
    return value


class Origin:
    def __init__(self, manager: ZoneManager) -> None:
        self.m = manager
        self._picks: dict[str, Pick] = {}
        self._picks_lock = threading.Lock()
        self._selecting = threading.Lock()
        self._walks = concurrent.futures.ThreadPoolExecutor(32, f"zone-{manager.name}-boot")

    def stop(self) -> None:
        self._walks.shutdown(wait=True, cancel_futures=False)

    def resume(self) -> None:
        """Go on with every boot in flight (a restart)."""
        with db.read(self.m.engine) as conn:
            pending = zstore.pending(conn)
            located = {r.uuid: zstore.locate(conn, r.uuid) for r in pending}
        for req in pending:
            LOG.info("zone %s: resuming boot %s", self.m.name, req.uuid)
            route = located[req.uuid]
            if route is not None and req.plan:
                plan = req.plan[req.attempt] if req.attempt < len(req.plan) else None
                if plan is not None:
                    self._hold(Pick(req.uuid, tuple(route), str(plan["host"]),
                                    req.body.get("resources") or {}))
            self._walks.submit(self._walk, req.uuid)

    # ---- the picks in flight ----------------------------------------------------------

    def _hold(self, pick: Pick) -> None:
        with self._picks_lock:
            self._picks[pick.uuid] = pick

    def _release(self, *uuids: str) -> None:
        with self._picks_lock:
            for uuid in uuids:
                self._picks.pop(uuid, None)

    def in_flight(self) -> list[dict[str, Any]]:
        with self._picks_lock:
            return [p.to_dict() for p in self._picks.values()]

    # ---- accepting a boot -------------------------------------------------------------

    def boot(self, request: dict[str, Any]) -> dict[str, Any]:
        """Accept, select and create a request's servers; ``{"status": 202, "servers"}``
        or ``{"status", "answer"}`` (the leaf's refusal, or the top's own)."""
        try:
            servers, batch = self._parse(request)
        except ValueError as exc:
            raise self.m.bad(f"a boot: {exc}") from None
        try:
            with db.write(self.m.engine) as conn:
                known = zstore.batch_of(conn, batch)
                if not known:
                    for i, server in enumerate(servers):
                        body = {k: v for k, v in request.items()
                                if k not in ("servers", "api")}
                        body.update(uuid=server["uuid"], name=server["name"], batch=batch,
                                    api=request["api"])
                        zstore.accept(conn, server["uuid"], body, batch, i)
        except sa.exc.IntegrityError:   # the same request, retried at the same moment
            with db.read(self.m.engine) as conn:
                known = zstore.batch_of(conn, batch)
            if not known:
                raise self.m.bad("a boot names servers another request has") from None
        if known:   # a retried request: the same servers, nothing new
            return {"status": 202, "servers": known}
        uuids = [s["uuid"] for s in servers]
        try:
            shape = self._shape(request)
        except Refusal as exc:
            self._drop(uuids)
            return {"status": exc.status, "message": exc.message}
        try:
            plans = self._select_all(request, uuids, shape)
            if plans is None:
                return {"status": 202, "servers": uuids}
            refused = self._first_tries(request, uuids, plans, shape)
        except Exception as exc:   # never leave accepted boots pending with no walk
            LOG.exception("zone %s: boot of %s failed", self.m.name, ", ".join(uuids))
            for uuid in uuids:
                self._fail(uuid, f"zone {self.m.name} could not boot it: {exc}", [])
            raise
        if refused is not None:
            return refused
        for uuid in uuids:
            self._walks.submit(self._walk, uuid)
        return {"status": 202, "servers": uuids}

    def _parse(self, request: Mapping[str, Any]) -> tuple[list[dict[str, str]], str]:
        batch = _text(request, "batch")
        _text(request, "project_id")
        servers = request.get("servers")
        if not isinstance(servers, list) or not servers or not all(
                isinstance(s, dict) and isinstance(s.get("uuid"), str)
                and isinstance(s.get("name"), str) for s in servers):
            raise ValueError("servers must be a list of {uuid, name}")
        flavor = request.get("flavor")
        if not isinstance(flavor, dict) or not isinstance(flavor.get("flavorid"), str):
            raise ValueError("flavor must be a flavor with its flavorid")
        resources = request.get("resources")
        if not isinstance(resources, dict) or not all(
                isinstance(k, str) and type(v) is int and v >= 0 for k, v in resources.items()):
            raise ValueError("resources must map resource classes to whole numbers")
        for key in ("ports", "networks"):
            if not isinstance(request.get(key, []), list) or not all(
                    isinstance(x, str) for x in request.get(key, [])):
                raise ValueError(f"{key} must be a list of ids")
        for key in ("image", "availability_zone"):
            _text(request, key, optional=True)
        try:
            wire.check(request.get("api"))
        except wire.WireError as exc:
            raise ValueError(str(exc)) from None
        return [dict(s) for s in servers], batch

    def _shape(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """What routing and every leaf's survey need of the request: the requirement,
        the leaf a port pins it to, the physical networks asked, the server group."""
        need: dict[str, Any] = dict(request.get("requirement") or {})
        traits = set(need.get("traits") or ())
        zones: set[str] | None = None
        budget = self.m.options.select_timeout
        ports = list(request.get("ports") or [])
        for port in ports:
            found = self.m.find_below("port", port, budget)
            if not found:
                raise Refusal(400, port_ops.port_missing(port).message)
            held = {f["route"][-1] for f in found}
            zones = held if zones is None else zones & held
        physnets: dict[str, str] = {}
        for network in request.get("networks") or []:
            found = self.m.find_below("network", network, budget)
            if not found:
                raise Refusal(400, port_ops.network_missing(network).message)
            physnet = found[0].get("physnet")
            if physnet:
                physnets[network] = str(physnet)
                traits.add(physnet_trait(str(physnet)))
            else:   # a tenant network lives in its leaf alone
                held = {f["route"][-1] for f in found}
                zones = held if zones is None else zones & held
        image = request.get("image")
        if image:
            images = self.m.capabilities().images
            if image not in images and ANY_IMAGE not in images:
                raise Refusal(400, image_ops.image_missing(str(image)).message)
        group = self._group(request.get("group"))
        if group and group["policy"] == "affinity" and group["members"]:
            held = {m["zone"] for m in group["members"]}
            zones = held if zones is None else zones & held
        need["traits"] = sorted(traits)
        if zones is not None:
            need["zones"] = sorted(zones)
        return {"requirement": need, "ports": ports, "physnets": physnets, "group": group}

    def _group(self, group: Any) -> dict[str, Any] | None:
        """The request's server group, with where its members are (the ones the tree
        placed)."""
        if not group:
            return None
        members: list[dict[str, str]] = []
        with db.read(self.m.engine) as conn:
            for uuid in group.get("members") or []:
                found = zstore.placement(conn, str(uuid))
                if found is not None:
                    members.append({"zone": found[0][-1], "host": found[1]})
        return {"uuid": str(group["uuid"]), "policy": str(group["policy"]),
                "max_per_host": group.get("max_per_host"), "members": members}

    def _survey_request(self, request: Mapping[str, Any], shape: Mapping[str, Any],
                        extra_members: list[dict[str, str]]) -> dict[str, Any]:
        group = shape["group"]
        if group is not None:
            group = dict(group, members=[*group["members"], *extra_members])
        return {"requirement": shape["requirement"],
                "flavor": request["flavor"]["flavorid"], "project_id": request["project_id"],
                "user_id": request.get("user_id") or "",
                "availability_zone": request.get("availability_zone"),
                "image": request.get("image"), "ports": shape["ports"], "group": group,
                "pending": self.in_flight()}

    def _select_all(self, request: Mapping[str, Any], uuids: list[str],
                    shape: Mapping[str, Any]) -> list[list[dict[str, Any]]] | None:
        """Each server's ranked hosts, its first one held as picked; None if some server
        got none (then every server of the request has failed, with the reasons)."""
        plans: list[list[dict[str, Any]]] = []
        batch_members: list[dict[str, str]] = []
        reasons: list[str] = []
        with self._selecting:
            for uuid in uuids:
                found = self.m.selector.select(
                    self._survey_request(request, shape, batch_members),
                    self.m.options.results, self.m.options.select_timeout)
                reasons = found.reasons()
                if not found.hosts:
                    break
                chosen = found.hosts[0]
                self._hold(Pick(uuid, chosen.route, chosen.host, request["resources"]))
                batch_members.append({"zone": chosen.zone, "host": chosen.host})
                plans.append([c.to_dict() for c in found.hosts])
        if len(plans) < len(uuids):
            self._release(*uuids)
            placed = len(plans)
            why = ("No zone offered a host." if len(uuids) == 1 else
                   f"No zone offered a host for every server ({placed} of {len(uuids)} "
                   "found one).")
            for uuid in uuids:
                self._fail(uuid, str(NoValidHost(why)), reasons)
            return None
        with db.write(self.m.engine) as conn:
            for uuid, plan in zip(uuids, plans, strict=True):
                zstore.plan(conn, uuid, plan, reasons)
        return plans

    def _first_tries(self, request: Mapping[str, Any], uuids: list[str],
                     plans: list[list[dict[str, Any]]], shape: Mapping[str, Any]
                     ) -> dict[str, Any] | None:
        """Create every server on its pick. A refusal by a leaf's compute API (4xx) takes
        back what was made and is the answer; a leaf that fails otherwise leaves that
        server to its walk."""
        made: list[tuple[str, list[str]]] = []
        for uuid, plan in zip(uuids, plans, strict=True):
            candidate = rank.Candidate.from_dict(plan[0])
            route = list(candidate.route)
            outcome = self._create(uuid, request, candidate, shape)
            status = outcome.get("status")
            if isinstance(status, int) and 400 <= status < 500:
                for done, done_route in made:
                    self._quietly_withdraw(done, done_route)
                self._drop(uuids)
                return {"status": status, "answer": outcome["answer"]}
            if status == 202:
                made.append((uuid, route))
            else:
                with db.write(self.m.engine) as conn:
                    zstore.attempt(conn, uuid, 1, [str(outcome.get("reason"))])
        return None

    def _create(self, uuid: str, request: Mapping[str, Any], c: rank.Candidate,
                shape: Mapping[str, Any]) -> dict[str, Any]:
        """Create ``uuid`` on ``c`` through its leaf's compute API; ``{"status": 202}``
        once its place is recorded, ``{"status", "answer"}`` for a refusal, or
        ``{"reason"}``."""
        with db.read(self.m.engine) as conn:
            req = zstore.request(conn, uuid)
        if req is None or req.cancelled:
            return {"reason": DELETED_WHILE_BUILDING}
        route = list(c.route)
        self._hold(Pick(uuid, tuple(route), c.host, request["resources"]))
        forwarded = self._create_request(req.body, c, shape)
        where = f"{c.zone}/{c.host}"
        try:
            answer = self.m.route_api(route, forwarded,
                                      timeout=self.m.options.build_timeout)
            status, _headers, body = wire.answer_of(answer)
        except MessagingTimeout:
            self._quietly_withdraw(uuid, route)
            late = route[1] if len(route) > 1 else route[0]
            return {"reason": f"{where}: zone {late} did not answer in time"}
        except (BusError, ZoneError, wire.WireError) as exc:
            return {"reason": f"{where}: {exc}"}
        if status != 202:
            return {"status": status, "answer": answer,
                    "reason": f"{where}: {_message(body) or status}"}
        with db.write(self.m.engine) as conn:
            if zstore.is_cancelled(conn, uuid):
                cancelled = True
            else:
                cancelled = False
                zstore.place(conn, uuid, route, c.host, str(req.body["project_id"]))
        if cancelled:
            self._quietly_withdraw(uuid, route)
            return {"reason": DELETED_WHILE_BUILDING}
        return {"status": 202}

    def _create_request(self, body: Mapping[str, Any], c: rank.Candidate,
                        shape: Mapping[str, Any]) -> dict[str, Any]:
        """The API request that creates this one server in its leaf: the client's body
        with this server's name and a count of one, and what the leaf must know."""
        api = dict(body["api"])
        data = json.loads(base64.b64decode(api["body"]) or b"{}")
        server = dict(data.get("server") or {})
        server.update(name=body["name"], min_count=1, max_count=1)
        data["server"] = server
        api["body"] = base64.b64encode(json.dumps(data).encode()).decode()
        zone: dict[str, Any] = {"build": {"uuid": body["uuid"], "host": c.host}}
        if body.get("keypair"):
            zone["keypair"] = body["keypair"]
        if body.get("group"):
            zone["group"] = body["group"]
        if shape.get("physnets"):
            zone["networks"] = shape["physnets"]
        api["zone"] = zone
        return api

    # ---- settling: the walk -----------------------------------------------------------

    def _walk(self, uuid: str) -> None:
        try:
            self._walk_on(uuid)
        except Exception as exc:  # never leave an acknowledged boot pending silently
            LOG.exception("zone %s: boot %s failed", self.m.name, uuid)
            self._fail(uuid, f"zone {self.m.name} could not boot it: {exc}", [])

    def _walk_on(self, uuid: str) -> None:
        while True:
            with db.read(self.m.engine) as conn:
                req = zstore.request(conn, uuid)
                route = zstore.locate(conn, uuid)
            if req is None or req.state != zstore.PENDING:
                self._release(uuid)
                return
            reasons = list(req.result.get("reasons") or [])
            if req.cancelled:
                if route is not None:
                    self._quietly_withdraw(uuid, route)
                self._finish(uuid, zstore.FAILED, {"reason": DELETED_WHILE_BUILDING})
                return
            if req.plan is None:   # accepted, then the origin stopped: select now
                plan = self._replan(req)
                if plan is None:
                    return
                continue
            if route is not None:
                outcome = self._settle(uuid, route)
                if outcome.get("ok"):
                    self._placed(uuid, route, reasons)
                    return
                reasons.append(str(outcome.get("reason") or "failed"))
                self._quietly_withdraw(uuid, route)
                with db.write(self.m.engine) as conn:
                    zstore.forget(conn, uuid)
                    zstore.attempt(conn, uuid, req.attempt + 1, reasons)
                continue
            if req.attempt >= len(req.plan):
                self._release(uuid)
                self._fail(uuid, str(NoValidHost(f"Tried {len(req.plan)} host(s); none "
                                                 "could build it.")), reasons)
                return
            candidate = rank.Candidate.from_dict(req.plan[req.attempt])
            outcome = self._create(uuid, req.body, candidate,
                                   self._shape_of(req.body, candidate))
            if outcome.get("status") != 202:
                reasons.append(str(outcome.get("reason") or "failed"))
                with db.write(self.m.engine) as conn:
                    zstore.attempt(conn, uuid, req.attempt + 1, reasons)

    def _shape_of(self, body: Mapping[str, Any], c: rank.Candidate) -> dict[str, Any]:
        try:
            return self._shape(body)
        except Refusal:
            return {"physnets": {}}

    def _replan(self, req: zstore.Request) -> list[dict[str, Any]] | None:
        try:
            shape = self._shape(req.body)
        except Refusal as exc:
            self._fail(req.uuid, exc.message, [])
            return None
        plans = self._select_all(req.body, [req.uuid], shape)
        return plans[0] if plans else None

    def _settle(self, uuid: str, route: list[str]) -> dict[str, Any]:
        deadline = self.m.clock() + self.m.options.build_timeout
        try:
            found = self.m.route_settle(route, uuid, deadline)
        except (BusError, ZoneError) as exc:
            return {"ok": False, "reason": f"{'/'.join(route)}: {exc}"}
        return found if isinstance(found, dict) else {"ok": False, "reason": "no answer"}

    def _placed(self, uuid: str, route: list[str], reasons: list[str]) -> None:
        self._release(uuid)
        with db.read(self.m.engine) as conn:
            where = zstore.placement(conn, uuid)
        host = where[1] if where else "?"
        self._finish(uuid, zstore.DONE, {"zone": route[-1], "host": host, "route": route,
                                         "reasons": reasons})
        LOG.info("zone %s: server %s is on %s in zone %s", self.m.name, uuid, host,
                 route[-1])

    def _quietly_withdraw(self, uuid: str, route: list[str]) -> None:
        try:
            self.m.route_withdraw(route, uuid)
        except Exception as exc:
            LOG.warning("zone %s: could not take back %s along %s: %s", self.m.name, uuid,
                        "/".join(route), exc)

    def _fail(self, uuid: str, reason: str, reasons: list[str]) -> None:
        LOG.warning("zone %s: boot %s failed: %s (%s)", self.m.name, uuid, reason,
                    "; ".join(reasons) or "no detail")
        self._release(uuid)
        self._finish(uuid, zstore.FAILED, {"reason": reason, "reasons": reasons})

    def _finish(self, uuid: str, state: str, result: dict[str, Any]) -> None:
        with db.write(self.m.engine) as conn:
            zstore.finish(conn, uuid, state, result)

    def _drop(self, uuids: list[str]) -> None:
        self._release(*uuids)
        with db.write(self.m.engine) as conn:
            for uuid in uuids:
                zstore.forget(conn, uuid)
                zstore.drop_request(conn, uuid, any_state=True)

    # ---- finding servers --------------------------------------------------------------

    def status_of(self, uuid: str) -> dict[str, Any] | None:
        with db.read(self.m.engine) as conn:
            req = zstore.request(conn, uuid)
        if req is None:
            return None
        return {"uuid": uuid, "state": req.state, "request": _shown(req.body),
                "created_at": req.created_at.isoformat(), **req.result}

    def _where(self, uuid: str) -> tuple[list[str] | None, zstore.Request | None]:
        """Where the tree holds a server and its boot record, read in one snapshot (a
        boot moving from one to the other is seen in one of them)."""
        with db.read(self.m.engine) as conn:
            return zstore.locate(conn, uuid), zstore.request(conn, uuid)

    def _discover(self, uuid: str) -> list[str] | None:
        """A server the tree did not place (created in a leaf directly): where it is,
        remembered from now on."""
        found = self.m.find_below("server", uuid, self.m.options.select_timeout)
        if len(found) != 1:
            if len(found) > 1:
                LOG.warning("zone %s: server %s is claimed by zones %s; not served",
                            self.m.name, uuid, ", ".join(f["route"][-1] for f in found))
            return None
        route = [str(z) for z in found[0]["route"]]
        with db.write(self.m.engine) as conn:
            if zstore.locate(conn, uuid) is None:
                zstore.place(conn, uuid, route, "", str(found[0].get("project_id") or ""))
        return route

    def server_api(self, uuid: str, request: dict[str, Any]) -> dict[str, Any]:
        """A request about one server: the answer of its leaf's compute API (with the
        leaf's zone), ``{"held": status}`` for a boot not in a leaf, or ``{"missing"}``."""
        route, req = self._where(uuid)
        if req is not None and not req.cancelled and (
                (route is None and req.state != zstore.DONE)
                or (req.state == zstore.PENDING and _shows(request, uuid))):
            # Until its boot ends, the origin shows the server (BUILD): a try that failed
            # in a leaf is not the server's end, the next host is.
            return {"held": self.status_of(uuid)}
        if route is None and req is None:
            route = self._discover(uuid)
        if route is None:
            return {"missing": True}
        try:
            answer = self.m.route_api(route, request)
        except (BusError, ZoneError) as exc:
            return {"unknown": str(exc), "zone": route[-1]}
        return {"answer": answer, "zone": route[-1]}

    def server_delete(self, uuid: str, request: dict[str, Any]) -> dict[str, Any]:
        """Delete a server: in its leaf (that leaf's compute API decides and answers), or
        the boot the top holds (``request["owner"]``: the caller's project, unless an
        admin asks): one in flight is cancelled (its walk takes back whatever it made),
        a failed one forgotten."""
        route, req = self._where(uuid)
        if route is None:
            owner = request.get("owner")
            if req is None:
                route = self._discover(uuid)   # made in a leaf directly
                if route is None:
                    return {"missing": True}
            elif req.cancelled or req.state == zstore.DONE or (
                    owner is not None and req.body.get("project_id") != owner):
                return {"missing": True}
            else:
                with db.write(self.m.engine) as conn:
                    if req.state == zstore.PENDING:
                        zstore.cancel(conn, uuid)
                    else:
                        zstore.drop_request(conn, uuid)
                return {"deleted": True}
        try:
            answer = self.m.route_api(route, request)
        except (BusError, ZoneError) as exc:
            return {"unknown": str(exc), "zone": route[-1]}
        status = answer.get("status") if isinstance(answer, dict) else None
        if status in (204, 404):
            with db.write(self.m.engine) as conn:
                zstore.forget(conn, uuid)
                if req is not None and req.state == zstore.PENDING:
                    zstore.cancel(conn, uuid)
                elif req is not None:
                    zstore.drop_request(conn, uuid)
        return {"answer": answer, "zone": route[-1]}

    def server_list(self, request: dict[str, Any], project_id: str | None
                    ) -> dict[str, Any]:
        """Every leaf's answer to a list request, and the servers the tree holds outside
        leaves: boots not in a leaf (``held``) and, of a leaf that did not answer, the
        servers the tree placed there (``stranded``)."""
        found = self.m.every_leaf(request, self.m.options.select_timeout)
        with db.read(self.m.engine) as conn:
            # Boots in flight are shown as the origin holds them (their leaf's row may
            # be a failed try): the API drops the leaves' rows of these.
            held = [_held(r) for r in zstore.unplaced(conn, project_id)]
            stranded = [s for s in zstore.located_in(conn, project_id)
                        if s["zone"] in found["unreachable"]]
        return dict(found, held=held, stranded=stranded)

    def tree_usage(self, project_id: str) -> dict[str, int]:
        """The project's servers, cores and RAM in every leaf, and its boots not in one
        yet (a boot between the two may be counted twice for a moment: never none)."""
        total = self.m.usage_below(project_id, self.m.options.select_timeout)
        with db.read(self.m.engine) as conn:
            pending = [r for r in zstore.unplaced(conn, project_id)
                       if r.state == zstore.PENDING]
            in_leaves = zstore.located_set(conn, [r.uuid for r in pending])
            for req in pending:
                if req.uuid in in_leaves:
                    continue
                resources = req.body.get("resources") or {}
                total["instances"] += 1
                total["cores"] += int(resources.get("VCPU", 0))
                total["ram"] += int(resources.get("MEMORY_MB", 0))
        return total


def _shows(request: Mapping[str, Any], uuid: str) -> bool:
    """Whether a request reads the server itself (GET /servers/{id})."""
    return request.get("method") == "GET" and \
        str(request.get("path", "")).rstrip("/").endswith(f"/servers/{uuid}")


def _shown(body: Mapping[str, Any]) -> dict[str, Any]:
    """A boot's record as the API renders it (not the forwarded request)."""
    return {k: v for k, v in body.items() if k not in ("api", "keypair")}


def _held(req: zstore.Request) -> dict[str, Any]:
    return {"uuid": req.uuid, "state": req.state, "request": _shown(req.body),
            "created_at": req.created_at.isoformat(),
            "updated_at": (req.updated_at or req.created_at).isoformat(), **req.result}


def _message(body: bytes) -> str | None:
    """A compute API fault's message."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict) and len(data) == 1:
        fault = next(iter(data.values()))
        if isinstance(fault, dict) and isinstance(fault.get("message"), str):
            return str(fault["message"])
    return None
