"""Stand up real Nova (see the package docstring) and take it down again."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import sqlalchemy as sa

from bench.nova_peer import stub
from tools import procs

HERE = Path(__file__).resolve().parent
REQUIREMENTS = ["nova==34.0.0", "openstack-placement==16.0.0", "pymysql", "gunicorn"]
MYSQL_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/"


def venv_path() -> Path:
    return Path(os.environ.get("STRATUS_NOVA_VENV",
                               Path.home() / ".cache" / "stratus" / "nova-venv"))


def ensure_venv() -> Path:
    venv = venv_path()
    marker = venv / ".stratus-requirements"
    wanted = "\n".join(REQUIREMENTS)
    if marker.exists() and marker.read_text() == wanted:
        return venv
    print(f"nova: installing {', '.join(REQUIREMENTS)} into {venv} (minutes) ...",
          file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *REQUIREMENTS], check=True)
    marker.write_text(wanted)
    return venv


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True, timeout=60)


PASTE = """\
[composite:osapi_compute]
use = call:nova.api.openstack.urlmap:urlmap_factory
/: oscomputeversions
/v2.1: oscomputeversion_v2
/v2.1/+: openstack_compute_api_v21

[composite:openstack_compute_api_v21]
use = call:nova.api.auth:pipeline_factory_v21
keystone = compute_req_id faultwrap sizelimit benchauth keystonecontext osapi_compute_app_v21

[filter:compute_req_id]
paste.filter_factory = nova.api.compute_req_id:ComputeReqIdMiddleware.factory
[filter:faultwrap]
paste.filter_factory = nova.api.openstack:FaultWrapper.factory
[filter:sizelimit]
paste.filter_factory = oslo_middleware:RequestBodySizeLimiter.factory
[filter:benchauth]
paste.filter_factory = bench.nova_peer.auth:filter_factory
[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory
[app:osapi_compute_app_v21]
paste.app_factory = nova.api.openstack.compute:APIRouterV21.factory
[pipeline:oscomputeversions]
pipeline = faultwrap oscomputeversionapp
[pipeline:oscomputeversion_v2]
pipeline = compute_req_id faultwrap oscomputeversionapp_v2
[app:oscomputeversionapp]
paste.app_factory = nova.api.openstack.compute.versions:Versions.factory
[app:oscomputeversionapp_v2]
paste.app_factory = nova.api.openstack.compute.versions:VersionsV2.factory
"""


class NovaCloud:
    """Nova with ``nodes`` fake nodes in one nova-compute, a super conductor and a cell
    conductor (each cell's services on the cell's own virtual host, as Nova documents)."""

    def __init__(self, work: Path, nodes: int, rabbit: str = "amqp://guest:guest@127.0.0.1:5672/"):
        self.work = work
        self.nodes = nodes
        self.rabbit = rabbit
        self.tag = uuid.uuid4().hex[:8]
        self.venv = ensure_venv()
        self.ports = {name: procs.free_port() for name in ("placement", "api", "stub")}
        self.dbs = {name: f"nova_bench_{self.tag}_{name}"
                    for name in ("api", "cell0", "cell1", "placement")}
        self.vhosts = {name: f"nova-bench-{self.tag}-{name}" for name in ("top", "cell1")}
        self.processes: dict[str, procs.ManagedProcess] = {}
        self._stub = None

    # -- the pieces ----------------------------------------------------------------------

    def db_url(self, name: str) -> str:
        return f"mysql+pymysql://root@127.0.0.1:3306/{self.dbs[name]}?charset=utf8"

    def transport(self, name: str) -> str:
        user = "guest:guest"
        return f"rabbit://{user}@127.0.0.1:5672/{self.vhosts[name]}"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['api']}"

    @property
    def placement_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['placement']}"

    def _conf(self, name: str, transport: str, database: str, api_database: bool) -> Path:
        stub_url = f"http://127.0.0.1:{self.ports['stub']}"
        lines = [
            "[DEFAULT]", f"transport_url = {transport}",
            "compute_driver = stratus_bench.ManyNodeFakeDriver",
            f"state_path = {self.work / 'state'}", f"instances_path = {self.work / 'instances'}",
            "instance_usage_audit = False", "heal_instance_info_cache_interval = -1",
            "my_ip = 127.0.0.1", "debug = False",
            "[api]", "auth_strategy = keystone",
            "[wsgi]", f"api_paste_config = {self.work / 'etc' / 'api-paste.ini'}",
            "[database]", f"connection = {database}", "max_pool_size = 10",
            "[placement]", "auth_type = admin_token", f"endpoint = {self.placement_url}",
            "token = admin",
            "[glance]", f"endpoint_override = {stub_url}", "auth_type = admin_token",
            f"endpoint = {stub_url}", "token = admin",
            "[neutron]", "auth_type = admin_token", f"endpoint_override = {stub_url}",
            f"endpoint = {stub_url}", "token = admin",
            "[oslo_policy]", "enforce_scope = False", "enforce_new_defaults = False",
            "[quota]", "driver = nova.quota.NoopQuotaDriver",
            "[oslo_messaging_notifications]", "driver = noop",
            "[vnc]", "enabled = False", "[spice]", "enabled = False",
            "[serial_console]", "enabled = False",
            "[conductor]", "workers = 1", "[scheduler]", "workers = 1",
            # Cells do not report instance changes up to a scheduler they cannot reach.
            "[filter_scheduler]", "track_instance_changes = False",
            "[oslo_concurrency]", f"lock_path = {self.work / 'locks'}",
        ]
        if api_database:
            lines += ["[api_database]", f"connection = {self.db_url('api')}",
                      "max_pool_size = 10"]
        path = self.work / "etc" / f"{name}.conf"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _env(self) -> dict[str, str]:
        root = str(HERE.parent.parent)
        return dict(os.environ, PYTHONPATH=root, STRATUS_BENCH_NOVA_NODES=str(self.nodes),
                    OS_NOVA_CONFIG_DIR=str(self.work / "etc"),
                    OS_NOVA_CONFIG_FILES="api-paste.ini;top.conf")

    def _bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.processes[name] = procs.ManagedProcess(name, argv, env or self._env(), self.work)

    def _manage(self, conf: Path, *args: str) -> str:
        done = subprocess.run([self._bin("nova-manage"), "--config-file", str(conf), *args],
                              env=self._env(), capture_output=True, text=True, timeout=600)
        if done.returncode not in (0, 1) or "Traceback" in done.stderr:
            raise RuntimeError(f"nova-manage {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    # -- up and down ---------------------------------------------------------------------

    def set_up(self, timeout: float = 3600) -> None:
        (self.work / "etc").mkdir(parents=True, exist_ok=True)
        for sub in ("state", "instances", "locks"):
            (self.work / sub).mkdir(exist_ok=True)
        (self.work / "etc" / "api-paste.ini").write_text(PASTE)
        engine = sa.create_engine(MYSQL_ADMIN, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            for name in self.dbs.values():
                conn.exec_driver_sql(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        engine.dispose()
        for vhost in self.vhosts.values():
            _rabbitmqctl("add_vhost", vhost)
            _rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        self._stub = stub.serve(self.ports["stub"])
        # Nova loads drivers from its own package only ("nova.virt." + compute_driver).
        site = next((self.venv / "lib").glob("python3*/site-packages"))
        (site / "nova" / "virt" / "stratus_bench.py").write_text(
            (HERE / "driver.py").read_text())

        top = self._conf("top", self.transport("top"), self.db_url("cell0"), api_database=True)
        cell = self._conf("cell1", self.transport("cell1"), self.db_url("cell1"),
                          api_database=False)

        penv = dict(self._env(), OS_PLACEMENT_DATABASE__CONNECTION=self.db_url("placement"),
                    OS_API__AUTH_STRATEGY="noauth2")
        # Before the workers start: two workers syncing at once race on the schema.
        subprocess.run([self._bin("placement-manage"), "db", "sync"], env=penv, check=True,
                       capture_output=True, timeout=600)
        self._start("placement", [self._bin("gunicorn"), "-w", "2", "-b",
                                  f"127.0.0.1:{self.ports['placement']}",
                                  "placement.wsgi.api:application"], penv)
        self.processes["placement"].wait_ready(self.placement_url, timeout=180)

        self._manage(top, "api_db", "sync")
        self._manage(top, "cell_v2", "map_cell0", "--database_connection",
                     self.db_url("cell0"))
        self._manage(top, "cell_v2", "create_cell", "--name", "cell1", "--database_connection",
                     self.db_url("cell1"), "--transport-url", self.transport("cell1"))
        self._manage(top, "db", "sync")                      # cell0 (its [database])
        self._manage(cell, "db", "sync", "--local_cell")     # cell1

        self._start("nova-api", [self._bin("gunicorn"), "-w", "2", "-b",
                                 f"127.0.0.1:{self.ports['api']}",
                                 "bench.nova_peer.osapi:application"])
        self._start("nova-conductor", [self._bin("nova-conductor"), "--config-file", str(top)])
        self._start("nova-scheduler", [self._bin("nova-scheduler"), "--config-file", str(top)])
        self._start("nova-cell-conductor", [self._bin("nova-conductor"), "--config-file",
                                            str(cell)])
        self._start("nova-compute", [self._bin("nova-compute"), "--config-file", str(cell)])
        self.processes["nova-api"].wait_ready(self.api_url + "/", timeout=180)
        self._wait_for_nodes(top, timeout)
        self._flavor()

    def _wait_for_nodes(self, top: Path, timeout: float) -> None:
        """Until Placement holds every node and the cell's hosts are mapped."""
        deadline = time.monotonic() + timeout
        headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
        seen = -1
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if not process.alive():
                    raise RuntimeError(f"{name} died:\n{process.log_tail()}")
            body = httpx.get(self.placement_url + "/resource_providers", headers=headers,
                             timeout=60).json()
            count = len(body.get("resource_providers", []))
            if count != seen:
                print(f"nova: {count}/{self.nodes} nodes in Placement", file=sys.stderr,
                      flush=True)
                seen = count
            if count >= self.nodes:
                self._manage(top, "cell_v2", "discover_hosts")
                return
            time.sleep(5)
        raise RuntimeError(f"nova: only {seen} of {self.nodes} nodes after {timeout:.0f} s")

    def _flavor(self) -> None:
        r = httpx.post(self.api_url + "/v2.1/flavors", headers=self.headers, json={
            "flavor": {"name": "m1.tiny", "ram": 512, "vcpus": 1, "disk": 1, "id": "1"}},
            timeout=60)
        if r.status_code not in (200, 409):
            raise RuntimeError(f"nova: flavor create {r.status_code}: {r.text}")

    headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.79"}

    def boot_body(self, name: str) -> dict:
        return {"server": {"name": name, "flavorRef": "1", "imageRef": stub.IMAGE_ID,
                           "networks": "none"}}

    def pids(self) -> dict[str, int]:
        """Process name -> the pid whose tree is that role (gunicorn and oslo.service fork
        workers under it)."""
        return {name: p.pid for name, p in self.processes.items()}

    def close(self) -> None:
        for process in reversed(list(self.processes.values())):
            with contextlib.suppress(Exception):
                process.stop()
        if self._stub is not None:
            self._stub.shutdown()
        with contextlib.suppress(Exception):
            engine = sa.create_engine(MYSQL_ADMIN, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                for name in self.dbs.values():
                    conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
            engine.dispose()
        for vhost in self.vhosts.values():
            with contextlib.suppress(Exception):
                _rabbitmqctl("delete_vhost", vhost)
