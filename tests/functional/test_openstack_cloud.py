"""The real OpenStack clients drive all of Stratus from the ``clouds.yaml`` that
``stratus serve`` writes, with nothing but ``OS_CLOUD`` (and where the file is) set:
python-openstackclient with osc-placement, then openstacksdk, each through the same
scenario: an image with properties, a port with a minimum-bandwidth QoS policy, a server
booted from both, listed, resized and confirmed, migrated and confirmed, its allocations
read from Placement, deleted.

The clients come from PyPI into a cached virtualenv (tools/osc_scenario.py installs
them; ``$STRATUS_OSC_VENV``); without network the test skips and says why, under CI it
fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.functional import cli_helpers, real_keystone
from tests.functional.cli_helpers import free_port, unavailable
from tests.functional.test_serve import Serve

pytestmark = pytest.mark.long

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _osc_tool() -> Any:
    spec = importlib.util.spec_from_file_location("osc_scenario", TOOLS / "osc_scenario.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("osc_scenario", module)   # its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def openstack() -> Path:
    tool = _osc_tool()
    venv = Path(os.environ.get("STRATUS_OSC_VENV") or tool.DEFAULT_VENV)
    try:
        return Path(tool.ensure_venv(venv, install=True))
    except tool.Unavailable as exc:
        unavailable(f"the openstack CLI is not available here: {exc}")
        raise AssertionError("unreachable") from None


@pytest.fixture
def cloud(tmp_path):
    srv = Serve(tmp_path, tmp_path / "data", "--hosts", "3").wait_ready()
    yield srv
    srv.kill()


def client_env(srv: Serve, cloud_name: str = "stratus") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "STRATUS_"))}
    env.update(OS_CLIENT_CONFIG_FILE=str(srv.data_dir / "clouds.yaml"), OS_CLOUD=cloud_name)
    return env


class Openstack:
    def __init__(self, binary: Path, env: dict[str, str]) -> None:
        self.binary, self.env = binary, env

    def __call__(self, *args: str, json_out: bool = True) -> Any:
        done = subprocess.run([str(self.binary), *args, *(["-f", "json"] if json_out else [])],
                              capture_output=True, text=True, env=self.env, timeout=240,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr[-800:]}"
        return json.loads(done.stdout) if json_out and done.stdout.strip() else done.stdout


@pytest.mark.timeout(1800)
def test_the_openstack_cli_drives_every_service_from_clouds_yaml(openstack, cloud, tmp_path):
    osc = Openstack(openstack, client_env(cloud))
    catalog = {entry["Type"] for entry in osc("catalog", "list")}
    assert catalog == {"identity", "compute", "placement", "network", "image"}
    cli_scenario(osc, tmp_path)


@pytest.mark.timeout(2400)
def test_the_same_scenario_through_a_real_keystone(openstack, tmp_path):
    """Keystone from PyPI issues the tokens and holds the catalog; every API of a
    ``stratus serve`` with ``[api] auth_strategy = keystone`` checks them through
    keystonemiddleware."""
    try:
        keystone_cm = real_keystone.running_keystone(tmp_path / "keystone")
        keystone = keystone_cm.__enter__()
    except real_keystone.Unavailable as exc:
        unavailable(f"keystone from PyPI is not available here: {exc}")
        return
    try:
        ports = {name: free_port() for name in ("placement", "compute", "network", "image")}
        keystone.register({
            "compute": f"http://127.0.0.1:{ports['compute']}/v2.1",
            "placement": f"http://127.0.0.1:{ports['placement']}",
            "network": f"http://127.0.0.1:{ports['network']}",
            "image": f"http://127.0.0.1:{ports['image']}"})
        srv = Serve(tmp_path, tmp_path / "data", "--hosts", "3",
                    "--port", str(ports["placement"]), "--api-port", str(ports["compute"]),
                    "--network-port", str(ports["network"]),
                    "--image-port", str(ports["image"]),
                    env={"OS_API__AUTH_STRATEGY": "keystone",
                         "OS_CATALOG__IDENTITY": f"{keystone.url}/v3",
                         **keystone.authtoken_env()}).wait_ready()
        try:
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OS_", "STRATUS_"))}
            env.update(OS_CLIENT_CONFIG_FILE=str(keystone.clouds_yaml(tmp_path / "c.yaml")),
                       OS_CLOUD="keystone")
            osc = Openstack(openstack, env)
            assert "Keystone at" in srv.output()
            assert not (srv.data_dir / "clouds.yaml").exists()   # Keystone's catalog rules
            cli_scenario(osc, tmp_path)
            # A token Keystone did not issue is refused by every API.
            paths = {"compute": "/v2.1/servers", "placement": "/resource_providers",
                     "network": "/v2.0/ports", "image": "/v2/images"}
            for name, path in paths.items():
                resp = httpx.get(f"http://127.0.0.1:{ports[name]}{path}",
                                 headers={"X-Auth-Token": "admin"}, timeout=30)
                assert resp.status_code == 401, (name, resp.text)
        finally:
            srv.kill()
    finally:
        keystone_cm.__exit__(None, None, None)


def cli_scenario(osc: Openstack, tmp_path: Path) -> None:
    """Image, QoS port, key pair, server; list, resize, migrate, allocations, delete."""
    disk = tmp_path / "disk.img"
    disk.write_bytes(os.urandom(4096))
    image = osc("image", "create", "--file", str(disk), "--disk-format", "qcow2",
                "--container-format", "bare", "--property", "hw_architecture=x86_64",
                "--property", "os_type=linux", "linux-x86")
    assert (image["status"], image["size"]) == ("active", 4096)
    assert image["properties"]["hw_architecture"] == "x86_64"

    policy = osc("network", "qos", "policy", "create", "gold")
    osc("network", "qos", "rule", "create", "--type", "minimum-bandwidth", "--min-kbps",
        "100000", "--egress", policy["id"])
    port = osc("port", "create", "--network", "physnet1", "--qos-policy", "gold", "p1")
    osc("keypair", "create", "k1", json_out=False)   # prints the private key

    server = osc("server", "create", "--image", "linux-x86", "--flavor", "m1.tiny",
                 "--port", port["id"], "--key-name", "k1", "--wait", "vm1")
    assert server["status"] == "ACTIVE" and server["key_name"] == "k1"
    assert server["image"].startswith("linux-x86")
    listed = {s["Name"]: s for s in osc("server", "list")}
    assert listed["vm1"]["Status"] == "ACTIVE" and listed["vm1"]["Image"] == "linux-x86"

    osc("server", "resize", "--flavor", "m1.small", "--wait", "vm1", json_out=False)
    assert osc("server", "show", "vm1")["status"] == "VERIFY_RESIZE"
    osc("server", "resize", "confirm", "vm1", json_out=False)
    resized = osc("server", "show", "vm1")
    assert resized["status"] == "ACTIVE" and resized["flavor"]["name"] == "m1.small"

    before = resized["OS-EXT-SRV-ATTR:host"]
    osc("server", "migrate", "--wait", "vm1", json_out=False)
    moved = osc("server", "show", "vm1")
    assert moved["status"] == "VERIFY_RESIZE" and moved["OS-EXT-SRV-ATTR:host"] != before
    osc("server", "resize", "confirm", "vm1", json_out=False)

    allocations = osc("--os-placement-api-version", "1.39", "resource", "provider",
                      "allocation", "show", server["id"])
    held = [a["resources"] for a in allocations]
    assert {"VCPU": 1, "MEMORY_MB": 2048, "DISK_GB": 20} in held
    assert {"NET_BW_EGR_KILOBIT_PER_SEC": 100000} in held

    hypervisors = osc("hypervisor", "list")
    assert len(hypervisors) == 3 and {h["State"] for h in hypervisors} == {"up"}
    # As Nova's detail list shows an admin: the zone of the computes, and "internal"
    # holding the scheduler and the conductor.
    assert sorted(z["Zone Name"] for z in osc("availability", "zone", "list")) == [
        "internal", "nova"]

    osc("server", "delete", "--wait", "vm1", json_out=False)
    assert osc("server", "list") == []
    assert osc("--os-placement-api-version", "1.39", "resource", "provider", "allocation",
               "show", server["id"]) == []


@pytest.mark.timeout(1800)
def test_openstacksdk_drives_the_same_scenario(openstack, cloud):
    python = openstack.parent / "python"
    done = subprocess.run([str(python), str(TOOLS / "sdk_scenario.py")], capture_output=True,
                          text=True, env=client_env(cloud), timeout=900,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    steps = json.loads(done.stdout.strip().splitlines()[-1])
    assert steps == ["catalog", "image", "port", "server", "resize", "migrate",
                     "allocations", "delete"]


@pytest.mark.timeout(600)
def test_a_demo_user_sees_only_its_own_project(openstack, cloud):
    admin = Openstack(openstack, client_env(cloud))
    demo = Openstack(openstack, client_env(cloud, "stratus-demo"))
    admin("server", "create", "--image", "cirros-0.6.2-x86_64-disk", "--flavor", "m1.tiny",
          "--network", "physnet1", "--wait", "admins")
    mine = demo("server", "create", "--image", "cirros-0.6.2-x86_64-disk", "--flavor",
                "m1.tiny", "--network", "physnet1", "--wait", "demos")
    assert mine["status"] == "ACTIVE"
    assert [s["Name"] for s in demo("server", "list")] == ["demos"]
    assert {s["Name"] for s in admin("server", "list", "--all-projects")} == {"admins",
                                                                              "demos"}


def _stratus(cwd: Path, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    """The ``stratus`` client run as a user beside serve's data directory: no flags, no
    STRATUS_* or OS_* variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "STRATUS_"))}
    done = cli_helpers.run("stratus", *args, env={**clean, **(env or {})}, cwd=cwd,
                           timeout=180)
    return done


@pytest.mark.timeout(900)
def test_stratus_and_openstack_are_one_user_from_serves_clouds_yaml(openstack, cloud,
                                                                     tmp_path):
    """Run beside serve's data directory, ``stratus`` authenticates with the clouds.yaml
    serve wrote (cloud ``stratus``: the Keystone admin, project ``admin``), so what it
    makes the ``openstack`` CLI lists, and the other way round, with no flags at all."""
    osc = Openstack(openstack, client_env(cloud))
    beside = cloud.data_dir.parent
    made = _stratus(beside, "server", "create", "from-stratus", "--flavor", "m1.tiny",
                    "--wait", "--json")
    assert made.returncode == 0, made.stderr
    osc("server", "create", "--image", "cirros-0.6.2-x86_64-disk", "--flavor", "m1.tiny",
        "--wait", "from-osc")
    listed = _stratus(beside, "server", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    ours = {s["id"]: s["name"] for s in json.loads(listed.stdout)}
    theirs = {s["ID"]: s["Name"] for s in osc("server", "list")}
    assert ours == theirs and sorted(ours.values()) == ["from-osc", "from-stratus"]
    shown = _stratus(beside, "server", "show", "from-osc", "--json")
    assert shown.returncode == 0, shown.stderr
    project = osc("project", "show", "admin")["id"]
    assert json.loads(shown.stdout)["tenant_id"] == project != "admin"

    # quota set names the Keystone project by its name, as openstack quota set does.
    done = _stratus(beside, "quota", "set", "admin", "--instances", "7")
    assert done.returncode == 0, done.stderr
    shown_quota = osc("quota", "show", "--compute", "admin")
    if isinstance(shown_quota, list):   # newer clients: one row per resource
        shown_quota = {row["Resource"]: row["Limit"] for row in shown_quota}
    assert shown_quota["instances"] == 7

    # The same from anywhere, given the cloud as the OpenStack clients are given it.
    elsewhere = _stratus(tmp_path.parent, "server", "list", "--json",
                         env=client_env(cloud, "stratus-demo"))
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert json.loads(elsewhere.stdout) == []      # the demo project has none

    # A noauth2 token is still taken when asked for (Placement-only set-ups), and a
    # refusal names whose credentials were refused.
    bad = _stratus(beside, "server", "list", env={"OS_CLOUD": "nope"})
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: no cloud named 'nope' in ") and \
        str(cloud.data_dir / "clouds.yaml") in bad.stderr
