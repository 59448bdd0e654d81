"""docs/ops/deploy.md's "A distributed deployment, step by step", run as written.

The blocks after a ``<!-- deploy-test -->`` marker are run in order in one ``bash``
against this machine's PostgreSQL (``STRATUS_TEST_POSTGRES_URL``) and, separately, its
MariaDB (``STRATUS_TEST_MYSQL_URL``), with RabbitMQ (``STRATUS_TEST_RABBIT_URL``, with
``rabbitmqctl`` as root beside it), with scratch names put into the variables the
document's first block sets (database kind, prefix and user, virtual host prefix and user,
directories, ports). It must end with servers ACTIVE and every service up, and no
process it started may show a password on its command line (``/proc/PID/cmdline`` is
read every half second while it runs). Everything it made (processes, databases, the
database user, virtual hosts, the RabbitMQ user) is removed afterwards. Without the
services the test skips; under CI it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from stratus.storage import engine as db
from tests.backends.test_db_bootstrap import drop_everything
from tests.functional import cli_helpers

pytestmark = [pytest.mark.backend, pytest.mark.long]

DOC = Path(__file__).resolve().parents[2] / "docs" / "ops" / "deploy.md"
BLOCK = re.compile(r"<!-- deploy-test -->\s*\n```bash\n(.*?)\n```", re.S)


def documented_script() -> str:
    blocks = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 5, "docs/ops/deploy.md lost its deploy-test blocks"
    return "set -eu\n" + "\n".join(blocks) + "\n"


def test_the_documented_blocks_are_found_in_order():
    script = documented_script()
    steps = ["db bootstrap", "add_vhost", "conf control", "api_db sync",
             "start placement-api", "compute --config-file", "discover_hosts",
             "server create first", "--count 3"]
    positions = [script.index(step) for step in steps]
    assert positions == sorted(positions)


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], capture_output=True, timeout=60, check=False)


KINDS = {"POSTGRES": "postgresql", "MYSQL": "mariadb"}


@pytest.mark.parametrize("backend", ["POSTGRES", "MYSQL"])
def test_documented_deployment_boots_servers(rabbit_url, tmp_path, backend):
    variable = cli_helpers.SERVER_ENV[backend]
    admin = os.environ.get(variable, "")
    if not admin:
        cli_helpers.unavailable(cli_helpers.backend_not_configured(backend))
    try:
        probe = db.create_engine(admin, isolation_level="AUTOCOMMIT")
        with probe.connect():
            pass
    except Exception as exc:
        cli_helpers.unavailable(f"{KINDS[backend]} at ${variable} is unreachable: {exc}")
    broker = urlsplit(rabbit_url)
    if not (shutil.which("rabbitmqctl") and os.geteuid() == 0
            and broker.hostname in ("127.0.0.1", "localhost")):
        cli_helpers.unavailable("the deployment test runs rabbitmqctl as root beside the "
                                "broker, as the document does")
    server = urlsplit(db.normalize_url(admin))
    tag = uuid.uuid4().hex[:8]
    names = {"prefix": f"stratus_dt{tag}", "user": f"stratus_dt{tag}",
             "vhosts": f"stratus-dt{tag}", "rabbit_user": f"stratus-dt{tag}"}
    ports = {k: str(cli_helpers.free_port()) for k in ("PLACEMENT_PORT", "API_PORT",
                                                       "NETWORK_PORT")}
    env = cli_helpers.clean_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        STRATUS_DB=KINDS[backend],
        STRATUS_DB_HOST=f"{server.hostname}:{server.port or DEFAULT_PORTS[backend]}",
        STRATUS_DB_ADMIN_URL=admin,
        STRATUS_DB_USER=names["user"], STRATUS_DB_PREFIX=names["prefix"],
        STRATUS_RABBIT_HOST=broker.hostname or "127.0.0.1",
        STRATUS_RABBIT_USER=names["rabbit_user"], STRATUS_VHOST_PREFIX=names["vhosts"],
        STRATUS_SECRETS=str(tmp_path / "secrets"), STRATUS_DATA_DIR=str(tmp_path / "data"),
        STRATUS_LOG_DIR=str(tmp_path / "log"), CONTROLLER="127.0.0.1", **ports)
    env.pop("STRATUS_API_URL", None)
    env.pop("STRATUS_PLACEMENT_URL", None)
    out = tmp_path / "script.log"
    proc = None
    watch = CommandLines()
    try:
        with open(out, "w") as log:
            proc = subprocess.Popen(["bash", "-c", documented_script()], env=env,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            watch.start(proc.pid)
            try:
                code = proc.wait(timeout=900)
            except subprocess.TimeoutExpired:
                code = None
        assert code == 0, f"the documented steps failed (exit {code}):\n" + _story(tmp_path)
        text = out.read_text()
        assert "ACTIVE" in text and "first" in text and "many-3" in text, text
        secrets = [(tmp_path / "secrets" / f).read_text().strip()
                   for f in ("db-password", "rabbit-password")]
        shown = [line for line in watch.stop() if any(p in line for p in secrets)]
        assert not shown, f"a password on a command line: {shown}"
        assert len(watch.seen) > 10, watch.seen   # it did look

        env["STRATUS_API_URL"] = f"http://127.0.0.1:{ports['API_PORT']}"
        listed = cli_helpers.run("stratus", "service", "list", "--json", env=env)
        assert listed.returncode == 0, listed.stderr
        services = json.loads(listed.stdout)
        by_binary: dict[str, int] = {}
        for svc in services:
            by_binary[svc["binary"]] = by_binary.get(svc["binary"], 0) + 1
        assert by_binary == {"stratus-compute": 4, "stratus-scheduler": 1,
                             "stratus-conductor": 3}, services
        assert {s["state"] for s in services} == {"up"}, services
        assert {s["zone"] for s in services if s["binary"] != "stratus-compute"} == {
            "internal"}
    finally:
        watch.stop()
        if proc is not None:
            _stop_group(proc.pid)
        drop_everything(probe, names["prefix"], names["user"])
        probe.dispose()
        for v in ("api", "cell1", "cell2"):
            _rabbitmqctl("delete_vhost", f"{names['vhosts']}-{v}")
        _rabbitmqctl("delete_user", names["rabbit_user"])


DEFAULT_PORTS = {"POSTGRES": 5432, "MYSQL": 3306}


class CommandLines:
    """Every command line seen in a process group, read from /proc while it runs."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, pgid: int) -> None:
        self._thread = threading.Thread(target=self._watch, args=(pgid,), daemon=True)
        self._thread.start()

    def _watch(self, pgid: int) -> None:
        while not self._stop.wait(0.5):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                with contextlib.suppress(OSError):
                    if os.getpgid(int(entry.name)) == pgid:
                        self.seen.add((entry / "cmdline").read_bytes().replace(
                            b"\0", b" ").decode(errors="replace").strip())

    def stop(self) -> set[str]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        return self.seen


def _stop_group(pgid: int) -> None:
    """Every process the script started (its background services share its group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _story(tmp_path: Path) -> str:
    parts = [(tmp_path / "script.log").read_text(errors="replace")]
    for log in sorted((tmp_path / "log").glob("*.log")) if (tmp_path / "log").exists() else []:
        parts.append(f"--- {log.name} (last lines)\n" + "\n".join(
            log.read_text(errors="replace").splitlines()[-15:]))
    return "\n".join(parts)
