"""Tempest 47.0.0 against a Stratus cloud: the judge of the OpenStack APIs.

    python tools/tempest/run.py --serve                       # a fresh serve, the interop list
    python tools/tempest/run.py --serve --regex tempest.api.compute --concurrency 2
    python tools/tempest/run.py --clouds data/clouds.yaml     # a running cloud (OS_CLOUD=stratus)
    python tools/tempest/run.py --serve --list interop --json /tmp/r.json

Tempest (and neutron-tempest-plugin) live in their own virtualenv
(``$STRATUS_TEMPEST_VENV``, default ``~/.cache/stratus/tempest-venv``), made on first use
from PyPI. ``tempest.conf`` is generated from the cloud's ``clouds.yaml`` and what the
cloud itself answers (its catalog, images, flavors, networks and network extensions);
microversion settings are Tempest's stock ones (``[compute] min_microversion`` and
``max_microversion`` unset) unless ``--microversions latest`` lets tests that need newer
ones run (compute up to the newest version the cloud claims; the minimum-bandwidth
placement scenarios need compute 2.72 and placement 1.29). A list's tests that the
stock settings skip for their microversion range (the interop guideline's
compute-keypairs-create-type needs compute 2.2, which a stock tempest.conf never runs)
run again against the same cloud with the newer settings, and that run's result is
theirs. ``--serve`` starts ``stratus serve`` on free ports in a
scratch data directory and counts its answers >= 500 from its log.

Prints a summary (passed, failed, skipped with reasons grouped) and each failure's
traceback tail; exits 1 when a test failed or an answer was >= 500.
"""

from __future__ import annotations

import argparse
import collections
import configparser
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import yaml

from tools import procs

HERE = Path(__file__).resolve().parent
TEMPEST_REQUIREMENTS = ["tempest==47.0.0", "neutron-tempest-plugin==3.3.0"]
LISTS = {"interop": HERE / "interop-2020.06.txt"}


def venv_path() -> Path:
    return Path(os.environ.get("STRATUS_TEMPEST_VENV",
                               Path.home() / ".cache" / "stratus" / "tempest-venv"))


def ensure_venv() -> Path:
    """The Tempest virtualenv, made (about two minutes, from PyPI) when missing."""
    venv = venv_path()
    marker = venv / ".stratus-requirements"
    wanted = "\n".join(TEMPEST_REQUIREMENTS)
    if marker.exists() and marker.read_text() == wanted:
        return venv
    print(f"tempest: installing {', '.join(TEMPEST_REQUIREMENTS)} into {venv} ...",
          file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *TEMPEST_REQUIREMENTS], check=True)
    marker.write_text(wanted)
    return venv


# -- the cloud ---------------------------------------------------------------------------

@dataclass
class Cloud:
    """What tempest.conf needs, read from clouds.yaml and asked of the cloud."""

    auth_url: str
    username: str
    password: str
    project: str
    region: str
    endpoints: dict[str, str] = field(default_factory=dict)   # service type -> public URL
    metrics: str | None = None       # the serve's /metrics, when this harness started it

    @classmethod
    def from_clouds_yaml(cls, path: Path, name: str = "stratus") -> Cloud:
        cloud = yaml.safe_load(path.read_text())["clouds"][name]
        auth = cloud["auth"]
        return cls(auth_url=auth["auth_url"], username=auth["username"],
                   password=str(auth["password"]), project=auth["project_name"],
                   region=cloud.get("region_name", "RegionOne"))

    def token(self) -> tuple[str, dict[str, Any]]:
        body = {"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": self.username, "domain": {"name": "Default"},
                "password": self.password}}},
            "scope": {"project": {"name": self.project, "domain": {"name": "Default"}}}}}
        r = httpx.post(self.auth_url.rstrip("/") + "/auth/tokens", json=body, timeout=30)
        r.raise_for_status()
        return r.headers["X-Subject-Token"], r.json()["token"]

    def discover(self) -> dict[str, Any]:
        """Catalog, images, flavors, networks and network extensions, as the admin sees them."""
        token, body = self.token()
        for service in body.get("catalog", []):
            for ep in service["endpoints"]:
                if ep["interface"] == "public" and ep.get("region", self.region) == self.region:
                    self.endpoints[service["type"]] = ep["url"].rstrip("/")
        headers = {"X-Auth-Token": token}

        def get(service: str, path: str) -> Any:
            r = httpx.get(self.endpoints[service] + path, headers=headers, timeout=30)
            r.raise_for_status()
            return r.json()

        network = self.endpoints["network"]
        if not network.endswith("/v2.0"):
            network += "/v2.0"
        self.endpoints["network"] = network
        images = [i for i in get("image", "/v2/images")["images"] if i["status"] == "active"]
        if len(images) == 1:
            images.append(self._second_image(headers, images[0]))
        flavors = sorted(get("compute", "/flavors/detail")["flavors"],
                         key=lambda f: (f["ram"], f["vcpus"], f["disk"]))
        networks = get("network", "/networks")["networks"]
        self._route_shared(headers, networks)
        extensions = [e["alias"] for e in get("network", "/extensions")["extensions"]]
        compute_max = get("compute", "").get("version", {}).get("version") or "latest"
        return {"images": images, "flavors": flavors, "networks": networks,
                "extensions": extensions, "compute_max": compute_max}


    def _route_shared(self, headers: dict[str, str], networks: list[dict[str, Any]]) -> None:
        """A router from the shared network servers boot on to the external network, as
        devstack's router1 joins its private network to public: Tempest's compute
        floating-IP tests map addresses to servers on [compute] fixed_network_name."""
        shared = [n for n in networks if n.get("shared") and not n.get("router:external")]
        external = [n for n in networks if n.get("router:external")]
        base = self.endpoints["network"]
        if not shared or not external or not shared[0].get("subnets") or httpx.get(
                f"{base}/routers", headers=headers, timeout=30).json()["routers"]:
            return
        r = httpx.post(f"{base}/routers", headers=headers, timeout=30, json={"router": {
            "name": "tempest-router",
            "external_gateway_info": {"network_id": external[0]["id"]}}})
        r.raise_for_status()
        httpx.put(f"{base}/routers/{r.json()['router']['id']}/add_router_interface",
                  headers=headers, timeout=30,
                  json={"subnet_id": shared[0]["subnets"][0]}).raise_for_status()

    def _second_image(self, headers: dict[str, str], first: dict[str, Any]) -> dict[str, Any]:
        """A second public image like the first: Tempest's image filters and rebuilds
        need ``image_ref_alt`` to differ from ``image_ref`` (devstack uploads one too)."""
        base = self.endpoints["image"] + "/v2/images"
        keep = ("disk_format", "container_format", "os_type", "os_distro", "hw_architecture")
        r = httpx.post(base, headers=headers, timeout=30, json={
            "name": first["name"] + "-alt", "visibility": "public",
            **{k: first[k] for k in keep if first.get(k) is not None}})
        r.raise_for_status()
        made = r.json()
        httpx.put(f"{base}/{made['id']}/file", content=b"tempest: image_ref_alt\n",
                  headers={**headers, "Content-Type": "application/octet-stream"},
                  timeout=30).raise_for_status()
        return dict(made, status="active")


def tempest_conf(cloud: Cloud, found: dict[str, Any], workspace: Path,
                 microversions: str = "stock") -> str:
    images, flavors = found["images"], found["flavors"]
    if not images:
        raise SystemExit("tempest: the cloud has no active image to boot from")
    # The two smallest flavors that boot the image (Tempest resizes from one to the other).
    usable = [f for f in flavors if f["disk"] >= 1] or flavors
    small, alt = usable[0], (usable[1] if len(usable) > 1 else usable[0])
    shared = [n for n in found["networks"] if n.get("shared") and not n.get("router:external")]
    external = [n for n in found["networks"] if n.get("router:external")]
    c = configparser.ConfigParser(interpolation=None)
    c["DEFAULT"] = {"log_dir": str(workspace / "logs"), "log_file": "tempest.log",
                    "use_stderr": "false"}
    c["oslo_concurrency"] = {"lock_path": str(workspace / "locks")}
    c["auth"] = {
        "use_dynamic_credentials": "true",
        "admin_username": cloud.username, "admin_password": cloud.password,
        "admin_project_name": cloud.project, "admin_domain_name": "Default",
        "default_credentials_domain_name": "Default",
        # Tests make their own networks, subnets and routers only where they test them.
        "create_isolated_networks": "false",
    }
    c["identity"] = {"uri_v3": cloud.auth_url, "auth_version": "v3",
                     "region": cloud.region, "v3_endpoint_type": "public"}
    c["identity-feature-enabled"] = {"api_v2": "false", "api_v3": "true",
                                     "security_compliance": "false",
                                     # Stratus serves no trusts (OS-TRUST): docs/compat.md.
                                     "trust": "false"}
    c["compute"] = {
        "image_ref": images[0]["id"], "image_ref_alt": images[-1]["id"],
        "flavor_ref": str(small["id"]), "flavor_ref_alt": str(alt["id"]),
        "region": cloud.region, "endpoint_type": "public",
        "build_timeout": "120", "build_interval": "1",
        "min_compute_nodes": "2",
    }
    if shared:
        c["compute"]["fixed_network_name"] = shared[0]["name"]
    c["compute-feature-enabled"] = {
        "resize": "true", "cold_migration": "true", "live_migration": "true",
        "shelve": "true", "pause": "true", "suspend": "true", "rescue": "true",
        "console_output": "true", "snapshot": "true", "interface_attach": "true",
        "change_password": "true", "metadata_service": "false", "config_drive": "false",
        "personality": "false", "vnc_console": "false", "spice_console": "false",
        "serial_console": "false", "attach_encrypted_volume": "false",
        "enable_instance_password": "true", "disk_config": "true",
    }
    c["network"] = {"region": cloud.region, "endpoint_type": "public",
                    "project_network_cidr": "10.100.0.0/16",
                    "project_networks_reachable": "false",
                    "build_timeout": "60", "build_interval": "1"}
    if external:
        c["network"]["public_network_id"] = external[0]["id"]
        c["network"]["floating_network_name"] = external[0]["name"]
    c["network-feature-enabled"] = {
        "api_extensions": ",".join(found["extensions"]) or "None",
        # IPv6 subnets, their address modes and SLAAC addresses are served.
        "ipv6": "true", "ipv6_subnet_attributes": "true",
        # The minimum-bandwidth placement scenarios: VLAN networks on the physnet the
        # fleet's NICs are on (serve's hosts: FLEET below), whose NICs also guarantee
        # packet rates; QoS policy changes on bound ports move their allocations.
        "qos_placement_physnet": QOS_PHYSNET, "provider_net_base_segmentation_id": "3000",
        "qos_min_bw_and_pps": "true", "available_features": "update_port_qos",
    }
    # Tempest runs against a cloud of its own here: shared QoS policies harm nobody.
    c["neutron_plugin_options"] = {"create_shared_resources": "true"}
    c["image"] = {"region": cloud.region, "endpoint_type": "public",
                  "build_timeout": "60", "build_interval": "1"}
    c["image-feature-enabled"] = {"api_v2": "true", "api_v1": "false",
                                  # Stratus stores image data as given; it does not inspect formats.
                                  "image_format_enforcement": "false"}
    c["placement"] = {"region": cloud.region, "endpoint_type": "public"}
    if microversions == "latest":
        # The newest the cloud claims (Tempest's "latest" would also run tests of
        # versions the cloud says it does not serve, and count their 406 as failures).
        c["compute"]["max_microversion"] = found.get("compute_max", "latest")
        c["placement"]["max_microversion"] = "latest"
    c["validation"] = {"run_validation": "false"}
    c["service_available"] = {
        "nova": "true", "neutron": "true", "glance": "true", "keystone": "true",
        "cinder": "false", "swift": "false", "heat": "false", "horizon": "false",
        "designate": "false", "barbican": "false", "octavia": "false",
    }
    c["volume-feature-enabled"] = {"backup": "false"}
    out = []
    for section in c.sections():
        out.append(f"[{section}]")
        out.extend(f"{k} = {v}" for k, v in c[section].items())
        out.append("")
    defaults = [f"{k} = {v}" for k, v in c.defaults().items()]
    return "\n".join(["[DEFAULT]", *defaults, "", *out])


# -- a serve of its own ------------------------------------------------------------------

QOS_PHYSNET = "physnet1"


def fleet(hosts: int) -> dict[str, Any]:
    """serve's default machine, whose NIC on physnet1 also guarantees packet rates, laid
    out as Neutron's Open vSwitch agent reports them (the rate on the agent's provider,
    the bandwidth on the NIC's below it): the QoS scenarios with minimum packet-rate
    rules expect the two on two providers."""
    nic = {"name": "ens1", "physnet": QOS_PHYSNET, "vnic_types": ["normal", "direct"],
           "egress_kbps": 10_000_000, "ingress_kbps": 10_000_000, "packet_rate_kpps": 10_000,
           "packet_rate_on": "agent"}
    return {"shapes": {"standard": {"vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
                                    "network_devices": [nic]}},
            "hosts": [{"count": hosts, "shape": "standard", "name": "compute{n:04d}"}]}


def start_serve(workdir: Path, hosts: int) -> tuple[procs.ManagedProcess, Cloud]:
    ports = {name: procs.free_port() for name in
             ("port", "api-port", "network-port", "identity-port", "image-port")}
    fleet_file = workdir / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump(fleet(hosts)))
    argv = [str(Path(sys.executable).parent / "stratus"), "serve",
            "--data-dir", str(workdir / "data"), "--fleet", str(fleet_file)]
    for name, port in ports.items():
        argv += [f"--{name}", str(port)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    process = procs.ManagedProcess("serve", argv, env, workdir)
    process.wait_ready(f"http://127.0.0.1:{ports['identity-port']}/v3", timeout=120)
    clouds = workdir / "data" / "clouds.yaml"
    deadline = time.monotonic() + 30
    while not clouds.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    cloud = Cloud.from_clouds_yaml(clouds)
    cloud.metrics = f"http://127.0.0.1:{ports['api-port']}/metrics"
    return process, cloud


METRIC = re.compile(r'^stratus_http_requests_total\{(?P<labels>[^}]*)\} (?P<n>[0-9.e+]+)$')


def server_errors(metrics_url: str | None) -> list[str]:
    """The serve's answers >= 500, by API, method and route, from its request metrics."""
    if not metrics_url:
        return []
    out = []
    for line in httpx.get(metrics_url, timeout=30).text.splitlines():
        m = METRIC.match(line)
        if m and re.search(r'status="5\d\d"', m["labels"]):
            out.append(f"{m['labels']}: {int(float(m['n']))}")
    return out


# -- running and reading the results -----------------------------------------------------

PARSER = r'''
import json, sys
import subunit, testtools
results = {}
def on_test(test):
    details = test["details"]
    def text(name):
        d = details.get(name)
        return d.as_text() if d is not None else ""
    results[test["id"]] = {"status": test["status"],
                           "reason": text("reason"),
                           "traceback": text("traceback")}
stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout")
result = testtools.StreamToDict(on_test)
result.startTestRun(); stream.run(result); result.stopTestRun()
json.dump(results, sys.stdout)
'''


def include_list(name_or_path: str, workspace: Path) -> Path:
    source = LISTS.get(name_or_path, Path(name_or_path))
    regexes = [line.split("#", 1)[0].strip() for line in source.read_text().splitlines()]
    path = workspace.parent / "include-list.txt"
    path.write_text("\n".join(r for r in regexes if r) + "\n")
    return path


def run_tempest(venv: Path, workspace: Path, conf: str, selection: list[str],
                concurrency: int) -> dict[str, dict[str, str]]:
    tempest = str(venv / "bin" / "tempest")
    if not (workspace / ".stestr.conf").exists():
        # A registry of our own: tempest refuses a workspace name it has seen before.
        subprocess.run([tempest, "init", "--name", f"stratus-{os.getpid()}-{time.time_ns()}",
                        "--workspace-path", str(workspace.parent / "tempest-workspaces.yaml"),
                        str(workspace)], check=True, stdout=subprocess.DEVNULL)
    (workspace / "etc" / "tempest.conf").write_text(conf)
    (workspace / "logs").mkdir(exist_ok=True)
    (workspace / "locks").mkdir(exist_ok=True)
    argv = [tempest, "run", "--subunit", "--concurrency", str(concurrency), *selection]
    with open(workspace / "results.subunit", "wb") as out:
        subprocess.run(argv, cwd=workspace, stdout=out, check=False,
                       env=dict(os.environ, TEMPEST_CONFIG_DIR=str(workspace / "etc")))
    with open(workspace / "results.subunit", "rb") as stream:
        parsed = subprocess.run([str(venv / "bin" / "python"), "-c", PARSER], stdin=stream,
                                capture_output=True, check=True)
    return json.loads(parsed.stdout)


CLASS_SETUP = re.compile(r"^(setUpClass|tearDownClass) \((?P<cls>[\w.]+)\)$")


def settle(results: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """Each test's outcome. A test only listed ("exists") took its class's set-up result:
    a class whose set-up failed or skipped runs none of its tests."""
    classes = {}
    for test_id, r in results.items():
        m = CLASS_SETUP.match(test_id)
        if m and m["cls"] not in classes and r["status"] in ("fail", "skip"):
            classes[m["cls"]] = r
    out = {}
    for test_id, r in results.items():
        if CLASS_SETUP.match(test_id):
            continue
        if r["status"] == "exists":
            cls = test_id.split("[", 1)[0].rsplit(".", 1)[0]
            setup = classes.get(cls)
            if setup is None:
                r = {"status": "fail", "reason": "", "traceback": "listed but never run"}
            elif setup["status"] == "skip":
                r = dict(setup)
            else:
                r = {"status": "fail", "reason": "",
                     "traceback": "class set-up failed:\n" + setup["traceback"]}
        out[test_id] = r
    return out


def listed_names(name_or_path: str) -> list[str]:
    """The test names a list's comments give (the interop list names each test)."""
    source = LISTS.get(name_or_path, Path(name_or_path))
    return [line.split("#", 1)[1].split()[-1] for line in source.read_text().splitlines()
            if "#" in line and not line.startswith("#")]


def select(results: dict[str, dict[str, str]], names: list[str],
           ids: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The outcome of exactly the named tests (an idempotent id can be shared by the
    subclasses of a test class; the guideline names one). A name Tempest no longer has
    (the test moved since the guideline was written: 2020.06's
    test_routers.RoutersTest.test_update_router_unset_gateway is
    admin.test_routers.RoutersAdminTest's in Tempest 47) is found by its idempotent
    id, ``ids`` (name -> id)."""
    by_name = {test_id.split("[", 1)[0]: r for test_id, r in results.items()}
    by_id: dict[str, dict[str, str]] = {}
    for test_id, r in results.items():
        found = re.search(r"\bid-([0-9a-f-]{36})", test_id)
        if found:
            by_id.setdefault(found.group(1), r)
    missing = {"status": "fail", "reason": "", "traceback": "not found among tempest's tests"}
    return {name: by_name.get(name) or by_id.get((ids or {}).get(name, ""), missing)
            for name in names}


def listed_ids(name_or_path: str) -> dict[str, str]:
    """name -> idempotent id, from the list's lines (``<id>  # ... <name>``)."""
    source = LISTS.get(name_or_path, Path(name_or_path))
    return {line.split("#", 1)[1].split()[-1]: line.split("#", 1)[0].strip()
            for line in source.read_text().splitlines()
            if "#" in line and not line.startswith("#")}


MICROVERSION_SKIP = "The microversion range"


def rerun_newer(venv: Path, workspace: Path, cloud: Cloud, results: dict[str, dict[str, str]],
                ids: dict[str, str], concurrency: int) -> dict[str, dict[str, str]]:
    """The listed tests skipped only for their microversion range under the stock
    settings, run again with the newer settings (``latest``): their results, each noting
    the setting it ran with."""
    skipped = [name for name, r in results.items()
               if r["status"] == "skip" and r["reason"].startswith(MICROVERSION_SKIP)]
    if not skipped:
        return {}
    conf = tempest_conf(cloud, cloud.discover(), workspace, "latest")
    listing = workspace.parent / "include-newer.txt"
    listing.write_text("\n".join(ids.get(n, n) for n in skipped) + "\n")
    again = settle(run_tempest(venv, workspace, conf, ["--include-list", str(listing)],
                               concurrency))
    out = select(again, skipped, ids)
    for r in out.values():
        r["microversions"] = "latest"
    return out


def summarise(results: dict[str, dict[str, str]], errors: list[str]) -> str:
    counts = collections.Counter(r["status"] for r in results.values())
    lines = [f"tempest: {len(results)} tests: " + ", ".join(
        f"{counts[s]} {s}" for s in ("success", "fail", "skip") if counts[s])
        + ("; answers >= 500 on " + str(len(errors)) + " routes" if errors
           else "; 0 answers >= 500")]
    reasons = collections.Counter(r["reason"].strip() or "(no reason)"
                                  for r in results.values() if r["status"] == "skip")
    for reason, n in reasons.most_common():
        lines.append(f"  skipped {n:4d}: {reason[:160]}")
    for test_id, r in sorted(results.items()):
        if r["status"] == "fail":
            tail = "\n      ".join(r["traceback"].strip().splitlines()[-4:])
            lines.append(f"  FAIL {test_id}\n      {tail}")
    lines.extend(f"  5xx: {e[:200]}" for e in errors[:20])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--serve", action="store_true",
                       help="start a fresh `stratus serve` on free ports and test it")
    where.add_argument("--clouds", type=Path, help="a running cloud's clouds.yaml")
    p.add_argument("--cloud", default="stratus", help="the cloud's name in clouds.yaml")
    p.add_argument("--hosts", type=int, default=4, help="with --serve: simulated hosts")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--list", default=None,
                      help="'interop' (the guideline's required tests) or a file of regexes")
    what.add_argument("--regex", help="tests whose id matches (e.g. tempest.api.compute)")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--microversions", choices=("stock", "latest"), default="stock",
                   help="'latest': [compute] max_microversion = the cloud's newest, "
                        "[placement] latest, so tests needing newer microversions run "
                        "(default: Tempest's stock settings)")
    p.add_argument("--workspace", type=Path, help="keep tempest's workspace here")
    p.add_argument("--json", type=Path, help="write every test's result here")
    args = p.parse_args(argv)

    venv = ensure_venv()
    workdir = Path(tempfile.mkdtemp(prefix="stratus-tempest-"))
    workspace = args.workspace or workdir / "workspace"
    serve = None
    try:
        if args.serve:
            serve, cloud = start_serve(workdir, args.hosts)
        else:
            cloud = Cloud.from_clouds_yaml(args.clouds, args.cloud)
        conf = tempest_conf(cloud, cloud.discover(), workspace, args.microversions)
        workspace.mkdir(parents=True, exist_ok=True)
        if args.regex:
            selection = ["--regex", args.regex]
        else:
            selection = ["--include-list", str(include_list(args.list or "interop", workspace))]
        results = settle(run_tempest(venv, workspace, conf, selection, args.concurrency))
        if not args.regex:
            chosen = args.list or "interop"
            results = select(results, listed_names(chosen), listed_ids(chosen)) \
                if results else {}
            if args.microversions == "stock":
                results.update(rerun_newer(venv, workspace, cloud, results, listed_ids(chosen),
                                           args.concurrency))
        errors = server_errors(cloud.metrics)
    finally:
        if serve is not None:
            serve.stop()
    if args.json:
        args.json.write_text(json.dumps({"results": results, "server_errors": errors},
                                        indent=1))
    print(summarise(results, errors))
    if not results:
        # Tempest found nothing to run: say why (a discovery failure, e.g. a bad option).
        raw = (workspace / "results.subunit").read_bytes().decode("utf-8", "replace")
        start = raw.find("Failures during discovery")
        print(raw[start:start + 3000] if start >= 0 else raw[-3000:], file=sys.stderr)
    failed = any(r["status"] == "fail" for r in results.values())
    return 1 if failed or errors or not results else 0


if __name__ == "__main__":
    sys.exit(main())
