"""One scenario of server actions, run against a flat deployment's compute API and a
zone tree's top with the same hosts, to compare what a user sees (status codes, the
server's status and host) and what Placement holds after each step (its books per
provider).

Used in-process (``test_zones_tree_api.py``) and over RabbitMQ with zone managers as
processes (``tests/backends/test_zones_tree_api_rabbitmq.py``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.91"}
SETTLED = ("ACTIVE", "ERROR", "VERIFY_RESIZE", "SHELVED", "SHELVED_OFFLOADED", "SHUTOFF",
           "PAUSED", "SUSPENDED", "RESCUE")


@dataclass
class Deployment:
    name: str
    api: httpx.Client                          # a compute API (flat, or a tree's top)
    books: Callable[[], dict[str, dict[str, int]]]
    network_id: str                            # a network to attach an interface on
    image_id: str                              # an image to rebuild with


def books_of_placement(placement: Any) -> dict[str, dict[str, int]]:
    """What each provider holds (by its name), from a Placement client."""
    out: dict[str, dict[str, int]] = {}
    for rp in placement._call("GET", "/resource_providers").json()["resource_providers"]:
        used = placement._call("GET", f"/resource_providers/{rp['uuid']}/usages") \
            .json()["usages"]
        held = {rc: n for rc, n in used.items() if n}
        if held:
            out[rp["name"]] = held
    return out


def books_of_database(url: str) -> Callable[[], dict[str, dict[str, int]]]:
    """The same, read from a Placement database (a leaf whose Placement has no HTTP)."""
    def read() -> dict[str, dict[str, int]]:
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.text(
                    "SELECT rp.name, rc.name, SUM(a.used) FROM allocations a "
                    "JOIN resource_providers rp ON rp.id = a.resource_provider_id "
                    "JOIN resource_classes rc ON rc.id = a.resource_class_id "
                    "GROUP BY rp.name, rc.name")).all()
        finally:
            engine.dispose()
        out: dict[str, dict[str, int]] = {}
        for provider, rc, used in rows:
            if used:
                out.setdefault(provider, {})[rc] = int(used)
        return out

    return read


def settle(api: httpx.Client, sid: str, seconds: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        resp = api.get(f"/servers/{sid}")
        if resp.status_code == 200:
            server = resp.json()["server"]
            if server["status"] in SETTLED and server["OS-EXT-STS:task_state"] is None:
                return dict(server)
        assert time.monotonic() < deadline, resp.text
        time.sleep(0.1)


@dataclass
class Outcome:
    step: str
    status: int
    server_status: str | None
    host: str | None
    books: dict[str, dict[str, int]]
    detail: str = ""
    method: str = ""
    path: str = ""
    action: str = ""                  # the action's name, for POST .../action

    def seen(self) -> tuple[Any, ...]:
        """What must be the same on both sides (a refusal's words too)."""
        return (self.step, self.status, self.server_status, self.host, self.books,
                self.detail if self.status >= 400 else "")


def run(d: Deployment) -> list[Outcome]:
    """Boot, every lifecycle action, every move and its undo, shelving, an interface, every
    sub-resource of a server, then delete (``uncovered`` names what a step list lacks)."""
    api = d.api
    out: list[Outcome] = []
    made = api.post("/servers", json={"server": {"name": "moves", "flavorRef": "1"}})
    assert made.status_code == 202, made.text
    sid: str = made.json()["server"]["id"]

    def record(step: str, resp: httpx.Response, wait: bool = True) -> httpx.Response:
        server = settle(api, sid) if wait else None
        words = resp.text[:300].replace(sid, "<server>")
        sent = resp.request
        action = next(iter(json.loads(sent.content)), "") \
            if sent.url.path.endswith("/action") else ""
        out.append(Outcome(step, resp.status_code, server["status"] if server else None,
                           server["OS-EXT-SRV-ATTR:host"] if server else None, d.books(),
                           words if resp.status_code >= 400 else "", sent.method,
                           sent.url.path, action))
        return resp

    def call(step: str, method: str, path: str, body: Any = None) -> httpx.Response:
        return record(step, api.request(method, f"/servers/{sid}{path}", json=body))

    def act(step: str, body: Any) -> None:
        call(step, "POST", "/action", body)

    record("boot", made)
    # The server itself and what it carries.
    call("rename", "PUT", "", {"server": {"name": "renamed"}})
    call("set metadata", "POST", "/metadata", {"metadata": {"a": "1", "b": "2"}})
    call("replace metadata", "PUT", "/metadata", {"metadata": {"a": "1"}})
    call("set one metadata item", "PUT", "/metadata/c", {"meta": {"c": "3"}})
    call("list metadata", "GET", "/metadata")
    call("show a metadata item", "GET", "/metadata/c")
    call("delete a metadata item", "DELETE", "/metadata/c")
    call("show a metadata item that is not there", "GET", "/metadata/c")
    call("add a tag", "PUT", "/tags/blue")
    call("check a tag", "GET", "/tags/blue")
    call("replace tags", "PUT", "/tags", {"tags": ["red", "green"]})
    call("list tags", "GET", "/tags")
    call("delete a tag", "DELETE", "/tags/red")
    call("delete every tag", "DELETE", "/tags")
    call("check a tag that is not there", "GET", "/tags/red")
    call("addresses", "GET", "/ips")
    call("addresses on a network that is not there", "GET", "/ips/nowhere")
    call("diagnostics", "GET", "/diagnostics")
    call("password", "GET", "/os-server-password")
    call("clear the password", "DELETE", "/os-server-password")
    call("security groups", "GET", "/os-security-groups")
    # Every lifecycle action.
    act("soft reboot", {"reboot": {"type": "SOFT"}})
    act("hard reboot", {"reboot": {"type": "HARD"}})
    act("stop", {"os-stop": None})
    act("stop a stopped server", {"os-stop": None})
    act("start", {"os-start": None})
    act("pause", {"pause": None})
    act("unpause", {"unpause": None})
    act("suspend", {"suspend": None})
    act("resume", {"resume": None})
    act("lock", {"lock": {"locked_reason": "maintenance"}})
    act("unlock", {"unlock": None})
    act("rescue", {"rescue": None})
    act("unrescue", {"unrescue": None})
    act("crash dump", {"trigger_crash_dump": None})
    act("change the password", {"changePassword": {"adminPass": "s3cret"}})
    act("reset the state", {"os-resetState": {"state": "active"}})
    act("inject network info", {"injectNetworkInfo": None})
    act("console output", {"os-getConsoleOutput": {"length": 5}})
    act("restore a server not deleted", {"restore": None})
    act("rebuild", {"rebuild": {"imageRef": d.image_id}})
    act("snapshot", {"createImage": {"name": "snap"}})
    act("backup", {"createBackup": {"name": "bak", "backup_type": "daily", "rotation": 1}})
    # Every move and its undo.
    act("resize", {"resize": {"flavorRef": "2"}})
    act("confirm a resize", {"confirmResize": None})
    act("confirm when nothing to confirm", {"confirmResize": None})
    act("cold migrate", {"migrate": None})
    act("revert", {"revertResize": None})
    act("resize to a flavor that is not there", {"resize": {"flavorRef": "nope"}})
    act("live migrate", {"os-migrateLive": {"host": None, "block_migration": "auto"}})
    act("evacuate from a host that is up", {"evacuate": {}})
    act("shelve", {"shelve": None})
    act("offload an offloaded server", {"shelveOffload": None})
    act("unshelve", {"unshelve": None})
    act("an action the API does not have", {"no-such-action": None})
    # An interface, the server's records.
    call("attach an interface", "POST", "/os-interface",
         {"interfaceAttachment": {"net_id": d.network_id}})
    listed = call("list interfaces", "GET", "/os-interface")
    ports = [p["port_id"] for p in listed.json().get("interfaceAttachments", [])]
    if ports:
        call("show it", "GET", f"/os-interface/{ports[0]}")
        act("add a security group it has", {"addSecurityGroup": {"name": "default"}})
        act("remove a security group", {"removeSecurityGroup": {"name": "default"}})
        act("remove a security group it lacks", {"removeSecurityGroup": {"name": "default"}})
        act("add a security group", {"addSecurityGroup": {"name": "default"}})
        call("detach it", "DELETE", f"/os-interface/{ports[0]}")
    actions = call("instance actions", "GET", "/os-instance-actions")
    out[-1].detail = ",".join(a["action"] for a in actions.json()["instanceActions"])
    first = actions.json()["instanceActions"][-1]["request_id"]
    call("an instance action", "GET", f"/os-instance-actions/{first}")
    call("its migrations in progress", "GET", "/migrations")
    call("a migration that is not there", "GET", "/migrations/4242")
    missing = "0f0f0f0f-0000-4000-8000-000000000000"
    record("a server that is not there", api.get(f"/servers/{missing}"), wait=False)
    record("delete", api.delete(f"/servers/{sid}"), wait=False)
    gone = time.monotonic() + 60
    while api.get(f"/servers/{sid}").status_code != 404:
        assert time.monotonic() < gone
        time.sleep(0.1)
    out[-1].books = d.books()
    record("force-delete a deleted server",
           api.post(f"/servers/{sid}/action", json={"forceDelete": None}), wait=False)
    return out


def uncovered(outcomes: list[Outcome]) -> set[str]:
    """Each server action and each method of a route under ``/servers/{server_id}`` of
    the flat API that no step of ``outcomes`` used (a new one must join the scenario)."""
    from stratus.api.http.handlers import lifecycle_actions, security_groups, server_actions
    from stratus.api.http.routes import ROUTES

    wanted = {f"action {a}" for a in (*server_actions.ACTIONS, *lifecycle_actions.ACTIONS,
                                      *security_groups.ACTIONS)}
    patterns = []
    for template, methods in ROUTES:
        if template.startswith("/servers/{server_id}"):
            regex = re.sub(r"\{[a-z_]+\}", "[^/]+", template)
            patterns.append((template, re.compile(f"^{regex}$")))
            wanted |= {f"{m} {template}" for m in methods}
    seen = {f"action {o.action}" for o in outcomes if o.action}
    for o in outcomes:
        path = o.path.split("/v2.1", 1)[-1]
        seen |= {f"{o.method} {t}" for t, pattern in patterns if pattern.match(path)}
    return wanted - seen


def compare(flat: list[Outcome], tree: list[Outcome]) -> None:
    """Both sides saw the same, step by step (the first difference is the message)."""
    assert [o.step for o in tree] == [o.step for o in flat]
    for a, b in zip(flat, tree, strict=True):
        assert b.seen() == a.seen(), f"{a.step}:\n flat {a}\n tree {b}"
    shown = {o.step: o.detail for o in flat}
    for o in tree:    # the instance actions the leaf recorded are the flat API's own
        if o.step == "instance actions":
            assert o.detail == shown[o.step]
