"""Helpers of the server lifecycle's functional tests: a world with two hosts, a server
booted from an image, actions through HTTP, waiting for a status, what a server holds."""

from __future__ import annotations

from typing import Any

import httpx

from tests.functional.compute_world import World, eventually

HOST = "OS-EXT-SRV-ATTR:host"
VM, TASK, POWER = "OS-EXT-STS:vm_state", "OS-EXT-STS:task_state", "OS-EXT-STS:power_state"


def ready(world: World, hosts: tuple[str, ...] = ("cmp1",)) -> tuple[str, str]:
    """Hosts up, a flavor and an image; (flavor id, image id)."""
    for host in hosts:
        world.add_compute(host)
    flavor = world.flavor("small", vcpus=1, ram=512, disk=1)
    image = world.image("cirros", hw_architecture="x86_64", os_distro="cirros")
    return str(flavor["id"]), image


def booted(world: World, flavor: str, image: str, name: str = "vm",
           client: Any = None, **server: Any) -> dict[str, Any]:
    """A server booted and ACTIVE; its body."""
    client = client or world.client
    body: dict[str, Any] = {"server": {"name": name, "flavorRef": flavor, "imageRef": image,
                                       **server}}
    resp = client.post("/servers", json=body)
    assert resp.status_code == 202, resp.text
    return settle(world, resp.json()["server"]["id"], "ACTIVE", client=client)


def act(world: World, sid: str, body: Any, client: Any = None) -> httpx.Response:
    return (client or world.client).post(f"/servers/{sid}/action", json=body)


def settle(world: World, sid: str, status: str, client: Any = None,
           seconds: float = 20.0) -> dict[str, Any]:
    """Wait until the server shows ``status`` with no task; its body."""
    client = client or world.client

    def done() -> Any:
        resp = client.get(f"/servers/{sid}")
        if resp.status_code != 200:
            return None
        body = resp.json()["server"]
        return body if body["status"] == status and not body.get(TASK) else None

    found = eventually(done, seconds)
    assert found, f"server {sid} is not {status}: {client.get(f'/servers/{sid}').text}"
    return dict(found)


def held(world: World, sid: str) -> dict[str, dict[str, int]]:
    """What the server holds in Placement: provider -> amounts."""
    found = world.placement.get_allocations(sid).get("allocations") or {}
    return {rp: dict(a["resources"]) for rp, a in found.items()}


def last_action(world: World, sid: str) -> dict[str, Any]:
    """The server's newest instance action with its events."""
    newest = world.client.get(f"/servers/{sid}/os-instance-actions").json()[
        "instanceActions"][0]
    return dict(world.client.get(f"/servers/{sid}/os-instance-actions/"
                                 f"{newest['request_id']}").json()["instanceAction"])


def clean(world: World) -> None:
    """The allocation audit finds nothing."""
    assert world.audit() == []
