"""One scenario of server actions, run against a flat deployment's compute API and a
zone tree's top with the same hosts, to compare what a user sees (status codes, the
server's status and host) and what Placement holds after each step (its books per
provider).

Used in-process (``test_zones_tree_api.py``) and over RabbitMQ with zone managers as
processes (``tests/backends/test_zones_tree_api_rabbitmq.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import sqlalchemy as sa

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.91"}
SETTLED = ("ACTIVE", "ERROR", "VERIFY_RESIZE", "SHELVED", "SHELVED_OFFLOADED", "SHUTOFF")


@dataclass
class Deployment:
    name: str
    api: httpx.Client                          # a compute API (flat, or a tree's top)
    books: Callable[[], dict[str, dict[str, int]]]
    network_id: str                            # a network to attach an interface on


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

    def seen(self) -> tuple[Any, ...]:
        """What must be the same on both sides (a refusal's words too)."""
        return (self.step, self.status, self.server_status, self.host, self.books,
                self.detail if self.status >= 400 else "")


def run(d: Deployment) -> list[Outcome]:
    """Boot, then every move and its undo, shelving, an interface, then delete."""
    api = d.api
    out: list[Outcome] = []

    def record(step: str, resp: httpx.Response, sid: str | None, wait: bool = True) -> None:
        server = settle(api, sid) if sid and wait else None
        words = resp.text[:300].replace(sid or "-", "<server>")
        out.append(Outcome(step, resp.status_code, server["status"] if server else None,
                           server["OS-EXT-SRV-ATTR:host"] if server else None, d.books(),
                           words if resp.status_code >= 400 else ""))

    made = api.post("/servers", json={"server": {"name": "moves", "flavorRef": "1"}})
    assert made.status_code == 202, made.text
    sid: str | None = made.json()["server"]["id"]
    record("boot", made, sid)

    def act(step: str, body: Any) -> None:
        record(step, api.post(f"/servers/{sid}/action", json=body), sid)

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
    attached = api.post(f"/servers/{sid}/os-interface",
                        json={"interfaceAttachment": {"net_id": d.network_id}})
    record("attach an interface", attached, sid)
    listed = api.get(f"/servers/{sid}/os-interface")
    record("list interfaces", listed, sid)
    ports = [p["port_id"] for p in listed.json().get("interfaceAttachments", [])]
    if ports:
        record("detach it", api.delete(f"/servers/{sid}/os-interface/{ports[0]}"), sid)
    actions = api.get(f"/servers/{sid}/os-instance-actions")
    record("instance actions", actions, sid)
    out[-1].detail = ",".join(a["action"] for a in actions.json()["instanceActions"])
    record("its migrations in progress", api.get(f"/servers/{sid}/migrations"), sid)
    record("a server that is not there", api.get("/servers/0f0f0f0f-0000-4000-8000-"
                                                 "000000000000"), None)
    record("delete", api.delete(f"/servers/{sid}"), None)
    gone = time.monotonic() + 60
    while api.get(f"/servers/{sid}").status_code != 404:
        assert time.monotonic() < gone
        time.sleep(0.1)
    out[-1].books = d.books()
    return out


def compare(flat: list[Outcome], tree: list[Outcome]) -> None:
    """Both sides saw the same, step by step (the first difference is the message)."""
    assert [o.step for o in tree] == [o.step for o in flat]
    for a, b in zip(flat, tree, strict=True):
        assert b.seen() == a.seen(), f"{a.step}:\n flat {a}\n tree {b}"
    shown = {o.step: o.detail for o in flat}
    for o in tree:    # the instance actions the leaf recorded are the flat API's own
        if o.step == "instance actions":
            assert o.detail == shown[o.step]
