"""The server lifecycle with the real ``openstack`` CLI against ``stratus serve``, from the
clouds.yaml it writes: reboot (soft and hard), stop, start, pause, suspend, rescue,
lock, set and unset properties, rename and describe, image create, rebuild, console
log, shelve, at the default microversion and at 2.1; the allocation audit is clean
after each step that could leave the books wrong."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.functional.test_openstack_cloud import Openstack, client_env, cloud, openstack

pytestmark = pytest.mark.long

__all__ = ["cloud", "openstack"]   # the fixtures this module uses


def wait_for(osc: Openstack, name: str, status: str, seconds: float = 60) -> dict[str, Any]:
    """``openstack server show`` until the server is ``status`` with no task."""
    deadline = time.monotonic() + seconds
    while True:
        shown = osc("server", "show", name)
        if shown["status"] == status and not shown.get("OS-EXT-STS:task_state"):
            return dict(shown)
        assert time.monotonic() < deadline, f"{name} is not {status}: {shown}"
        time.sleep(0.5)


def audited(srv: Any) -> None:
    done = srv.manage("placement", "audit")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(1800)
def test_the_server_lifecycle_through_the_openstack_cli(openstack, cloud, tmp_path):
    osc = Openstack(openstack, client_env(cloud))
    image = osc("image", "list")[0]["Name"]
    osc("server", "create", "--image", image, "--flavor", "m1.tiny", "--wait", "vm1")
    for args in (("reboot", "--wait"), ("reboot", "--hard", "--wait")):
        osc("server", *args, "vm1", json_out=False)
        assert osc("server", "show", "vm1")["status"] == "ACTIVE"

    osc("server", "stop", "vm1", json_out=False)
    assert wait_for(osc, "vm1", "SHUTOFF")["OS-EXT-STS:power_state"] in ("Shutdown", 4)
    osc("server", "start", "vm1", json_out=False)
    wait_for(osc, "vm1", "ACTIVE")
    audited(cloud)

    for on, off, status in (("pause", "unpause", "PAUSED"),
                            ("suspend", "resume", "SUSPENDED")):
        osc("server", on, "vm1", json_out=False)
        wait_for(osc, "vm1", status)
        osc("server", off, "vm1", json_out=False)
        wait_for(osc, "vm1", "ACTIVE")
    osc("server", "rescue", "--password", "r3scue", "vm1", json_out=False)
    wait_for(osc, "vm1", "RESCUE")
    osc("server", "unrescue", "vm1", json_out=False)
    wait_for(osc, "vm1", "ACTIVE")

    osc("--os-compute-api-version", "2.73", "server", "lock", "--reason", "audit", "vm1",
        json_out=False)
    locked = osc("--os-compute-api-version", "2.73", "server", "show", "vm1")
    assert locked["locked"] is True and locked["locked_reason"] == "audit"
    osc("server", "unlock", "vm1", json_out=False)

    osc("server", "set", "--property", "role=web", "--property", "tier=1", "vm1",
        json_out=False)
    assert osc("server", "show", "vm1")["properties"] == {"role": "web", "tier": "1"}
    osc("server", "unset", "--property", "tier", "vm1", json_out=False)
    assert osc("server", "show", "vm1")["properties"] == {"role": "web"}
    osc("--os-compute-api-version", "2.19", "server", "set", "--name", "web1",
        "--description", "front end", "vm1", json_out=False)
    renamed = osc("--os-compute-api-version", "2.19", "server", "show", "web1")
    assert renamed["description"] == "front end"

    osc("server", "image", "create", "--name", "web1-snap", "--wait", "web1")
    snap = osc("image", "show", "web1-snap")
    assert snap["status"] == "active"
    assert snap["properties"]["image_type"] == "snapshot"
    assert snap["properties"]["instance_uuid"] == renamed["id"]
    wait_for(osc, "web1", "ACTIVE")

    osc("server", "rebuild", "--image", "web1-snap", "--wait", "web1", json_out=False)
    rebuilt = wait_for(osc, "web1", "ACTIVE")
    assert rebuilt["image"].startswith("web1-snap")
    assert "login:" in osc("console", "log", "show", "web1", json_out=False)
    audited(cloud)

    # The oldest microversion still lists and shows what it knows.
    old = osc("--os-compute-api-version", "2.1", "server", "show", "web1")
    assert old["status"] == "ACTIVE" and old.get("description") is None   # from 2.19
    assert [s["Name"] for s in osc("--os-compute-api-version", "2.1", "server", "list")] \
        == ["web1"]
    # ... and the lifecycle commands people script work there too.
    v21 = ("--os-compute-api-version", "2.1")
    osc(*v21, "server", "stop", "web1", json_out=False)
    wait_for(osc, "web1", "SHUTOFF")
    osc(*v21, "server", "start", "web1", json_out=False)
    wait_for(osc, "web1", "ACTIVE")
    osc(*v21, "server", "reboot", "--wait", "web1", json_out=False)
    osc(*v21, "server", "lock", "web1", json_out=False)
    assert osc("server", "show", "web1")["locked"] is True
    osc(*v21, "server", "unlock", "web1", json_out=False)
    osc(*v21, "server", "set", "--property", "era=old", "web1", json_out=False)
    assert osc(*v21, "server", "show", "web1")["properties"]["era"] == "old"
    osc(*v21, "keypair", "create", "k21", json_out=False)   # Nova's 200 before 2.2
    assert [k["Name"] for k in osc(*v21, "keypair", "list")] == ["k21"]
    assert "m1.tiny" in {f["Name"] for f in osc(*v21, "flavor", "list")}
    assert len(osc(*v21, "hypervisor", "list")) == 3
    osc(*v21, "server", "rebuild", "--image", image, "--wait", "web1", json_out=False)
    assert wait_for(osc, "web1", "ACTIVE")["image"].startswith(image)

    osc("server", "shelve", "web1", json_out=False)
    wait_for(osc, "web1", "SHELVED_OFFLOADED")
    osc("server", "unshelve", "web1", json_out=False)
    wait_for(osc, "web1", "ACTIVE")
    audited(cloud)
    osc("server", "delete", "--wait", "web1", json_out=False)
    assert osc("server", "list") == []
    audited(cloud)
