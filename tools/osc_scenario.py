#!/usr/bin/env python3
"""Drive Stratus with the real ``openstack`` CLI (python-openstackclient + osc-placement).

    python tools/osc_scenario.py [--service placement|network] [--venv DIR]
                                 [--no-install] [--report PATH] [--endpoint URL]

Creates or reuses a virtualenv (default ~/.cache/stratus/osc-venv) holding the
two client packages from PyPI, starts ``stratus placement-api`` (or
``stratus network-api``) on a scratch SQLite file (unless --endpoint names a
running server), and plays an operator's session against it. Placement:
providers (with a child), inventories, a custom resource class, traits,
aggregates, allocations, usages, candidates, then the deletes. Network: a
provider network and its subnet, a QoS policy with minimum bandwidth and packet
rate rules, a port carrying its resource request, then the deletes.
Every command runs with ``-f json`` where it prints something, and its output
is checked. A step whose prerequisite failed is reported as skipped.

Exit status: 0 every step passed, 1 some step failed, 3 the CLI could not be
installed or run (no network, no venv): the caller decides whether that is fatal.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_VENV = Path.home() / ".cache" / "stratus" / "osc-venv"
PACKAGES = ["python-openstackclient", "osc-placement"]
API_VERSION = "1.39"
EXIT_FAILED, EXIT_UNAVAILABLE = 1, 3


class Unavailable(Exception):
    """The openstack CLI cannot be had here (no network for pip, no venv module...)."""


class StepFailed(Exception):
    pass


# ---- the client ----------------------------------------------------------------------


def ensure_venv(venv: Path, install: bool) -> Path:
    """The ``openstack`` executable in ``venv``, installing the packages first if needed."""
    binary = venv / "bin" / "openstack"
    if binary.exists() and _works(binary):
        return binary
    if not install:
        raise Unavailable(f"no working openstack CLI in {venv} (and --no-install given)")
    print(f"installing {' '.join(PACKAGES)} into {venv} ...", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
              *PACKAGES]]
    for cmd in steps:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"{' '.join(cmd[:3])}: {exc}") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise Unavailable(f"{' '.join(cmd[:3])} failed: {last}")
    if not _works(binary):
        raise Unavailable(f"{binary} was installed but does not run")
    return binary


def _works(binary: Path) -> bool:
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Osc:
    """``openstack`` against one endpoint, with the admin token noauth2 accepts."""

    def __init__(self, binary: Path, endpoint: str) -> None:
        self.base = [str(binary), "--os-auth-type", "admin_token", "--os-token", "admin",
                     "--os-endpoint", endpoint, "--os-placement-api-version", API_VERSION]
        # The caller's cloud settings (OS_CLOUD, OS_AUTH_URL, ...) must not leak in.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.log: list[str] = []

    def __call__(self, *args: str, output: bool = True) -> Any:
        cmd = [*self.base, *args, *(["-f", "json"] if output else [])]
        shown = "openstack " + " ".join(args)
        self.log.append(shown)
        done = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=120,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            why = " ".join(done.stderr.split())[-400:] or f"exit {done.returncode}"
            raise StepFailed(f"`{shown}` failed: {why}")
        if not output:
            return None
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise StepFailed(f"`{shown}` printed no JSON: {done.stdout[:200]!r}") from None


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise StepFailed(message)


# ---- the scenario --------------------------------------------------------------------


@dataclass
class State:
    root: str | None = None
    child: str | None = None
    consumer: str = field(default_factory=lambda: str(uuid.uuid4()))
    project: str = field(default_factory=lambda: str(uuid.uuid4()))
    user: str = field(default_factory=lambda: str(uuid.uuid4()))
    aggregate: str = field(default_factory=lambda: str(uuid.uuid4()))
    done: set[str] = field(default_factory=set)


@dataclass
class Step:
    name: str
    needs: tuple[str, ...]
    run: Callable[[Osc, State], None]


def _by(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {row[key]: row for row in rows}


def create_root(osc: Osc, s: State) -> None:
    rp = osc("resource provider create", "compute-1")
    expect(rp["name"] == "compute-1" and rp["generation"] == 0, f"unexpected provider {rp}")
    expect(rp["root_provider_uuid"] == rp["uuid"] and rp["parent_provider_uuid"] is None,
           f"a new provider is its own root: {rp}")
    s.root = rp["uuid"]


def create_child(osc: Osc, s: State) -> None:
    rp = osc("resource provider create", "compute-1-numa0", "--parent-provider", str(s.root))
    expect(rp["parent_provider_uuid"] == s.root and rp["root_provider_uuid"] == s.root,
           f"child not under its parent: {rp}")
    s.child = rp["uuid"]
    tree = _by(osc("resource provider list", "--in-tree", str(s.root)), "uuid")
    expect(set(tree) == {s.root, s.child}, f"--in-tree lists {sorted(tree)}")


def set_inventory(osc: Osc, s: State) -> None:
    rows = osc("resource provider inventory set", str(s.root), "--resource", "VCPU=8",
               "--resource", "VCPU:allocation_ratio=4.0", "--resource", "MEMORY_MB=16384",
               "--resource", "MEMORY_MB:reserved=512")
    inv = _by(rows, "resource_class")
    expect(inv["VCPU"]["total"] == 8 and inv["VCPU"]["allocation_ratio"] == 4.0,
           f"VCPU inventory: {inv.get('VCPU')}")
    expect(inv["MEMORY_MB"]["reserved"] == 512, f"MEMORY_MB inventory: {inv.get('MEMORY_MB')}")
    shown = osc("resource provider inventory show", str(s.root), "VCPU")
    # Placement's default max_unit is the largest int; "used" comes with the show.
    expect(shown["total"] == 8 and shown["max_unit"] == 2**31 - 1 and shown["used"] == 0,
           f"inventory show: {shown}")


def create_resource_class(osc: Osc, s: State) -> None:
    osc("resource class create", "CUSTOM_FPGA", output=False)
    expect(osc("resource class show", "CUSTOM_FPGA")["name"] == "CUSTOM_FPGA", "class not shown")
    names = {row["name"] for row in osc("resource class list")}
    expect({"CUSTOM_FPGA", "VCPU"} <= names, "class list misses CUSTOM_FPGA or VCPU")


def child_inventory(osc: Osc, s: State) -> None:
    inv = _by(osc("resource provider inventory set", str(s.child), "--resource",
                  "CUSTOM_FPGA=2"), "resource_class")
    expect(inv["CUSTOM_FPGA"]["total"] == 2, f"child inventory: {inv}")


def create_trait(osc: Osc, s: State) -> None:
    osc("trait create", "CUSTOM_FAST_NIC", output=False)
    expect(osc("trait show", "CUSTOM_FAST_NIC")["name"] == "CUSTOM_FAST_NIC", "trait not shown")
    names = {row["name"] for row in osc("trait list", "--name", "startswith:CUSTOM_")}
    expect(names == {"CUSTOM_FAST_NIC"}, f"trait list --name startswith:CUSTOM_: {names}")


def set_provider_traits(osc: Osc, s: State) -> None:
    rows = osc("resource provider trait set", str(s.root), "--trait", "CUSTOM_FAST_NIC",
               "--trait", "HW_CPU_X86_AVX2")
    expect({r["name"] for r in rows} == {"CUSTOM_FAST_NIC", "HW_CPU_X86_AVX2"}, f"{rows}")
    listed = {r["name"] for r in osc("resource provider trait list", str(s.root))}
    expect(listed == {"CUSTOM_FAST_NIC", "HW_CPU_X86_AVX2"}, f"trait list: {listed}")


def set_aggregates(osc: Osc, s: State) -> None:
    generation = osc("resource provider show", str(s.root))["generation"]
    rows = osc("resource provider aggregate set", str(s.root), "--aggregate", s.aggregate,
               "--generation", str(generation))
    expect([r["uuid"] for r in rows] == [s.aggregate], f"aggregate set: {rows}")
    listed = [r["uuid"] for r in osc("resource provider aggregate list", str(s.root))]
    expect(listed == [s.aggregate], f"aggregate list: {listed}")
    members = {r["uuid"] for r in osc("resource provider list", "--aggregate-uuid", s.aggregate)}
    expect(members == {s.root}, f"providers in the aggregate: {members}")


def list_candidates(osc: Osc, s: State) -> None:
    rows = osc("allocation candidate list", "--resource", "VCPU=2",
               "--required", "CUSTOM_FAST_NIC", "--member-of", s.aggregate)
    expect(len(rows) >= 1, f"no candidates: {rows}")
    none = osc("allocation candidate list", "--resource", "VCPU=64")
    expect(none == [], f"VCPU=64 of 32 should find nothing: {none}")


def set_allocation(osc: Osc, s: State) -> None:
    rows = osc("resource provider allocation set", s.consumer,
               "--allocation", f"rp={s.root},VCPU=2,MEMORY_MB=1024",
               "--allocation", f"rp={s.child},CUSTOM_FPGA=1",
               "--project-id", s.project, "--user-id", s.user, "--consumer-type", "INSTANCE")
    by_rp = _by(rows, "resource_provider")
    expect(by_rp[s.root]["resources"] == {"VCPU": 2, "MEMORY_MB": 1024}, f"{rows}")
    expect(by_rp[s.child]["resources"] == {"CUSTOM_FPGA": 1}, f"{rows}")
    shown = _by(osc("resource provider allocation show", s.consumer), "resource_provider")
    expect(set(shown) == {s.root, s.child}, f"allocation show: {shown}")


def show_usages(osc: Osc, s: State) -> None:
    usage = {r["resource_class"]: r["usage"] for r in
             osc("resource provider usage show", str(s.root))}
    expect(usage == {"VCPU": 2, "MEMORY_MB": 1024}, f"provider usage: {usage}")
    # From 1.38 usages are grouped by consumer type, and osc-placement shows each
    # group as one row: resource_class INSTANCE, usage {consumer_count, classes...}.
    total = {r["resource_class"]: r["usage"] for r in osc("resource usage show", s.project)}
    wanted = {"consumer_count": 1, "VCPU": 2, "MEMORY_MB": 1024, "CUSTOM_FPGA": 1}
    expect(total == {"INSTANCE": wanted}, f"project usage: {total}")
    mine = {r["resource_class"]: r["usage"] for r in
            osc("resource usage show", s.project, "--user-id", s.user)}
    expect(mine == total, f"user usage: {mine}")


def delete_allocation(osc: Osc, s: State) -> None:
    osc("resource provider allocation delete", s.consumer, output=False)
    usage = {r["resource_class"]: r["usage"] for r in
             osc("resource provider usage show", str(s.root))}
    expect(all(v == 0 for v in usage.values()), f"usage after delete: {usage}")


def delete_traits_and_inventory(osc: Osc, s: State) -> None:
    osc("resource provider trait delete", str(s.root), output=False)
    expect(osc("resource provider trait list", str(s.root)) == [], "traits left")
    osc("resource provider inventory delete", str(s.child), "--resource-class", "CUSTOM_FPGA",
        output=False)
    expect(osc("resource provider inventory list", str(s.child)) == [], "inventory left")


def delete_providers(osc: Osc, s: State) -> None:
    osc("resource provider delete", str(s.child), output=False)
    osc("resource provider delete", str(s.root), output=False)
    left = {r["uuid"] for r in osc("resource provider list")}
    expect(not left & {s.root, s.child}, f"providers left: {left}")


def delete_class_and_trait(osc: Osc, s: State) -> None:
    osc("resource class delete", "CUSTOM_FPGA", output=False)
    osc("trait delete", "CUSTOM_FAST_NIC", output=False)
    names = {row["name"] for row in osc("trait list", "--name", "startswith:CUSTOM_")}
    expect(names == set(), f"custom traits left: {names}")


STEPS = [
    Step("resource provider create", (), create_root),
    Step("child provider create (--parent-provider)", ("resource provider create",),
         create_child),
    Step("inventory set / show", ("resource provider create",), set_inventory),
    Step("resource class create / show / list", (), create_resource_class),
    Step("child inventory of a custom class",
         ("child provider create (--parent-provider)", "resource class create / show / list"),
         child_inventory),
    Step("trait create / show / list", (), create_trait),
    Step("resource provider trait set / list",
         ("resource provider create", "trait create / show / list"), set_provider_traits),
    Step("aggregate set / list", ("resource provider create",), set_aggregates),
    Step("allocation candidate list",
         ("inventory set / show", "resource provider trait set / list", "aggregate set / list"),
         list_candidates),
    Step("allocation set / show",
         ("inventory set / show", "child inventory of a custom class"), set_allocation),
    Step("usage show (provider, project, user)", ("allocation set / show",), show_usages),
    Step("allocation delete", ("allocation set / show",), delete_allocation),
    Step("trait delete / inventory delete",
         ("resource provider trait set / list", "child inventory of a custom class"),
         delete_traits_and_inventory),
    Step("resource provider delete", ("child provider create (--parent-provider)",),
         delete_providers),
    Step("resource class and trait delete",
         ("resource class create / show / list", "trait create / show / list"),
         delete_class_and_trait),
]


# ---- the network scenario --------------------------------------------------------------


def net_create(osc: Osc, s: State) -> None:
    net = osc("network create", "--provider-network-type", "flat",
              "--provider-physical-network", "physnet1", "--share", "osc-net")
    expect(net["provider:network_type"] == "flat" and
           net["provider:physical_network"] == "physnet1" and net["shared"] is True,
           f"provider network: {net}")
    expect("osc-net" in {n["Name"] for n in osc("network list")}, "network list misses it")


def subnet_create(osc: Osc, s: State) -> None:
    sub = osc("subnet create", "--network", "osc-net", "--subnet-range", "10.7.0.0/24",
              "osc-subnet")
    expect(sub["cidr"] == "10.7.0.0/24" and sub["gateway_ip"] == "10.7.0.1", f"subnet: {sub}")
    pools = sub["allocation_pools"]
    expect(pools == [{"start": "10.7.0.2", "end": "10.7.0.254"}], f"pools: {pools}")


def qos_create(osc: Osc, s: State) -> None:
    osc("network qos policy create", "osc-bw")
    osc("network qos rule create", "--type", "minimum-bandwidth", "--min-kbps", "1000",
        "--egress", "osc-bw")
    osc("network qos rule create", "--type", "minimum-bandwidth", "--min-kbps", "2000",
        "--ingress", "osc-bw")
    osc("network qos rule create", "--type", "minimum-packet-rate", "--min-kpps", "100",
        "--any", "osc-bw")
    rules = {(r["Type"], r["Direction"]) for r in osc("network qos rule list", "osc-bw")}
    expect(rules == {("minimum_bandwidth", "egress"), ("minimum_bandwidth", "ingress"),
                     ("minimum_packet_rate", "any")}, f"rules: {rules}")
    types = {t["Type"] for t in osc("network qos rule type list")}
    expect({"minimum_bandwidth", "minimum_packet_rate"} <= types, f"rule types: {types}")


def port_create(osc: Osc, s: State) -> None:
    port = osc("port create", "--network", "osc-net", "--vnic-type", "direct",
               "--qos-policy", "osc-bw", "osc-port")
    request = port["resource_request"]
    bw, pps = request["request_groups"]
    expect(bw["required"] == ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT"] and
           bw["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                               "NET_BW_IGR_KILOBIT_PER_SEC": 2000}, f"bandwidth: {bw}")
    expect(pps["resources"] == {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 100} and
           request["same_subtree"] == [bw["id"], pps["id"]], f"packet rate: {request}")
    expect(port["fixed_ips"][0]["ip_address"] == "10.7.0.2", f"address: {port['fixed_ips']}")
    listed = {p["Name"]: p for p in osc("port list")}
    expect(listed["osc-port"]["Status"] == "DOWN", f"port list: {listed}")
    shown = osc("port show", "osc-port")
    expect(shown["binding_vnic_type"] == "direct" and shown["binding_host_id"] == "",
           f"port show: {shown}")


def network_deletes(osc: Osc, s: State) -> None:
    osc("port delete", "osc-port", output=False)
    osc("network qos policy delete", "osc-bw", output=False)
    osc("subnet delete", "osc-subnet", output=False)
    osc("network delete", "osc-net", output=False)
    expect(osc("port list") == [] and osc("network list") == [] and
           osc("network qos policy list") == [], "something is left after the deletes")


NETWORK_STEPS = [
    Step("network create (provider physnet) / list", (), net_create),
    Step("subnet create", ("network create (provider physnet) / list",), subnet_create),
    Step("qos policy and minimum rules", (), qos_create),
    Step("port create with a QoS policy: resource_request",
         ("subnet create", "qos policy and minimum rules"), port_create),
    Step("port, qos, subnet and network delete",
         ("port create with a QoS policy: resource_request",), network_deletes),
]


def run_scenario(osc: Osc, steps: list[Step] = STEPS) -> list[dict[str, Any]]:
    state = State()
    results: list[dict[str, Any]] = []
    for step in steps:
        missing = [n for n in step.needs if n not in state.done]
        first = len(osc.log)
        if missing:
            status, detail = "skipped", f"needs: {', '.join(missing)}"
        else:
            try:
                step.run(osc, state)
                status, detail = "passed", ""
                state.done.add(step.name)
            except StepFailed as exc:
                status, detail = "failed", str(exc)
            except (KeyError, TypeError, IndexError) as exc:
                status, detail = "failed", f"unexpected output shape: {exc!r}"
        results.append({"step": step.name, "status": status, "detail": detail,
                        "commands": osc.log[first:]})
        print(f"{status.upper():8} {step.name}{'  ' + detail if detail else ''}", flush=True)
    return results


# ---- the server ----------------------------------------------------------------------


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


COMMANDS = {"placement": ["placement-api", "--db"], "network": ["network-api", "--db"]}


def start_server(workdir: Path, service: str = "placement") -> Server:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = workdir / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    command, db_flag = COMMANDS[service]
    cmd = [sys.executable, "-m", "stratus.cli.main", command, "--port", str(port),
           db_flag, f"sqlite:///{workdir / f'{service}.db'}"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL,
                                cwd=Path(__file__).resolve().parent.parent)
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"stratus {command} exited:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(server.url + "/", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"stratus {command} did not answer:\n{log.read_text()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--service", choices=sorted(COMMANDS), default="placement",
                        help="which API the session drives (default placement)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV,
                        help=f"virtualenv for the openstack CLI (default {DEFAULT_VENV})")
    parser.add_argument("--no-install", action="store_true",
                        help="use the venv as it is; exit 3 if it has no openstack CLI")
    parser.add_argument("--endpoint", help="a running Placement API to use instead of "
                        "starting one (it must be empty of this scenario's names)")
    parser.add_argument("--report", type=Path, help="write the per-step results as JSON here")
    args = parser.parse_args(argv)

    try:
        binary = ensure_venv(args.venv, install=not args.no_install)
    except Unavailable as exc:
        print(f"openstack CLI unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    workdir = Path(tempfile.mkdtemp(prefix="stratus-osc-"))
    server = None
    try:
        if args.endpoint:
            endpoint = args.endpoint
        else:
            server = start_server(workdir, args.service)
            endpoint = server.url
        print(f"openstack CLI: {binary}; {args.service} API: {endpoint}", flush=True)
        results = run_scenario(Osc(binary, endpoint),
                               NETWORK_STEPS if args.service == "network" else STEPS)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.report:
        args.report.write_text(json.dumps(results, indent=2))
    counts = {k: sum(r["status"] == k for r in results) for k in ("passed", "failed", "skipped")}
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 0 if counts["passed"] == len(results) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
