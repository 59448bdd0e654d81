"""Run openstack-placement's own gabbi suites, unmodified, against a live Stratus server.

The reference implementation ships its functional tests as gabbi YAML files
(``placement/tests/functional/gabbits/*.yaml``). Each file names a fixture that,
in Placement's tree, builds an in-process service and creates data through
Python objects. This tool replays those files over real HTTP against Stratus:

* one uvicorn server in this process, serving ``stratus.placement.service.make_app``
  behind a switch, so each YAML file gets a fresh SQLite database and the
  configuration its fixture asks for (policy defaults, open policy, CORS);
* the fixture's data (providers, inventories, traits, aggregates, allocations)
  created through Stratus's HTTP API by a setup function per fixture
  (``tools/gabbi_compat_fixtures.py``), and
  the environment variables the YAML reads (``$ENVIRON['RP_UUID']``...) set to match;
* gabbi itself in a separate, cached virtualenv (``~/.cache/stratus/gabbi-venv``,
  ``pip install gabbi`` plus ``openstack-placement==16.0.0`` without its
  dependencies, only for the YAML files), driven as a worker subprocess that
  runs this same file in ``--worker`` mode, so nothing of gabbi's enters our venv.

Usage::

    .venv/bin/python tools/gabbi_compat.py                      # every file
    .venv/bin/python tools/gabbi_compat.py resource-classes.yaml microversion.yaml -v
    .venv/bin/python tools/gabbi_compat.py --json /tmp/r.json --markdown docs/compat-gabbits.md
    .venv/bin/python tools/gabbi_compat.py --target peer        # check the harness on the peer

``--target peer`` runs the same files against openstack-placement itself (one
gunicorn per file, from ``--peer-venv``), which is how the fixture translations
here were checked: a file that fails there is a harness problem, not Stratus's.

Only the standard library is imported at module level: ``--worker`` mode runs
under the gabbi virtualenv's interpreter, where Stratus is not installed.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from gabbi_compat_fixtures import (
    CORS_HEADERS,
    CORS_ORIGIN,
    FIXTURES,
    HARNESS_SKIPS,
    Builder,
    Fixture,
    SetupError,
    base_env,
    fixture_names,
    open_policy_rules,
)

PEER_VERSION = "16.0.0"
GABBI_VERSION = "4.2.3"  # the version these results were checked with (see --target peer)
DEFAULT_VENV = os.path.expanduser("~/.cache/stratus/gabbi-venv")
GABBITS_REL = "placement/tests/functional/gabbits"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------
# Worker mode: runs inside the gabbi virtualenv, one YAML file per request.
# ---------------------------------------------------------------------------


def _worker() -> int:
    """Read JSON requests on stdin ({file, url, env}); answer one JSON line each."""
    import unittest
    from urllib.parse import urlsplit

    from gabbi import runner, suitemaker, utils

    handlers = runner.initialize_handlers([], False)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # anything gabbi prints must not corrupt the protocol
    base_env = dict(os.environ)
    for line in sys.stdin:
        request = json.loads(line)
        os.environ.clear()
        os.environ.update(base_env)
        os.environ.update(request["env"])
        url = urlsplit(request["url"])
        try:
            with open(request["file"], encoding="utf-8") as fh:
                data = utils.load_yaml(fh)
            # Fixtures are ours (created over HTTP before this call): gabbi gets none.
            data.pop("fixtures", None)
            suite = suitemaker.test_suite_from_dict(
                unittest.defaultTestLoader, "gabbi", data, os.path.dirname(request["file"]),
                url.hostname, url.port, None, None, handlers=handlers,
                test_loader_name="gabbi_compat")
            result = _RecordingResult()
            suite.run(result)
            answer: dict[str, Any] = {"tests": result.records}
        except Exception as exc:  # report whatever broke loading the file
            answer = {"error": f"{type(exc).__name__}: {exc}", "tests": []}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


def _recording_result_class() -> type:
    import unittest

    class RecordingResult(unittest.TestResult):
        """Keeps, per gabbi test, the outcome and what was asked and answered."""

        def __init__(self) -> None:
            super().__init__()
            self.records: list[dict[str, Any]] = []

        def _record(self, test: Any, status: str, detail: str = "") -> None:
            data = getattr(test, "test_data", {}) or {}
            response = getattr(test, "response", None) or {}
            self.records.append({
                "name": data.get("name") or str(test),
                "status": status,
                "method": data.get("method", ""),
                "url": getattr(test, "url", None) or data.get("url", ""),
                "expected_status": str(data.get("status", "")),
                "actual_status": str(response.get("status", "")) if response else "",
                "detail": detail,
            })

        def addSuccess(self, test: Any) -> None:
            self._record(test, "pass")

        def addFailure(self, test: Any, err: Any) -> None:
            self._record(test, "fail", _short_error(self._exc_info_to_string(err, test)))

        def addError(self, test: Any, err: Any) -> None:
            self._record(test, "error", _short_error(self._exc_info_to_string(err, test)))

        def addSkip(self, test: Any, reason: str) -> None:
            self._record(test, "skip", reason)

        def addExpectedFailure(self, test: Any, err: Any) -> None:
            self._record(test, "pass", "xfail")

        def addUnexpectedSuccess(self, test: Any) -> None:
            self._record(test, "pass", "unexpected success of an xfail test")

    return RecordingResult


def _RecordingResult() -> Any:  # built lazily: unittest is only needed in workers
    return _recording_result_class()()


def _short_error(text: str, limit: int = 1500) -> str:
    """The assertion message of a traceback, not the frames of gabbi's own code."""
    lines = text.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines)
              if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Failure|Exit)\b", line)]
    if starts:
        # The final exception's message in full; a chained cause by its first line only.
        last = starts[-1]
        cause = [f"(caused by {lines[starts[0]]})"] if starts[0] != last else []
        text = "\n".join([*lines[last:], *cause])
    return text if len(text) <= limit else text[:limit] + "\n...truncated..."


# ---------------------------------------------------------------------------
# The gabbi virtualenv and the peer's YAML files.
# ---------------------------------------------------------------------------


def venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv: str) -> None:
    """Create the cached gabbi virtualenv if it is missing or incomplete."""
    py = venv_python(venv)
    probe = "import importlib.metadata as m; print(m.version('gabbi'))"
    if os.path.exists(py) and find_gabbits(venv) and subprocess.run(
        [py, "-c", probe], capture_output=True, text=True, check=False
    ).stdout.strip() == GABBI_VERSION:
        return
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"gabbi=={GABBI_VERSION}"], check=True)
    # Only the YAML files are needed, not the service: skip its dependencies.
    subprocess.run([*pip, "--no-deps", f"openstack-placement=={PEER_VERSION}"], check=True)


def find_gabbits(venv: str) -> str | None:
    found = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", GABBITS_REL))
    return found[0] if found else None


# ---------------------------------------------------------------------------
# Targets: an in-process Stratus server (default) or the peer under gunicorn.
# ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StratusTarget:
    """One uvicorn server; each file swaps in an app on a fresh database.

    SQLite by default (a copy of a migrated template per file); with ``server_url``
    (PostgreSQL or MariaDB) a scratch database is created, migrated and dropped per file.
    """

    def __init__(self, workdir: str, server_url: str | None = None) -> None:
        import uvicorn

        from stratus.allinone.http import DEFAULT_MAX_BODY_BYTES
        from stratus.placement import db as placement_db
        from stratus.storage import engine as db
        from stratus.web.wsgi_bridge import WSGIBridge

        self.workdir = workdir
        self.server_url = server_url
        self.template = os.path.join(workdir, "template.db")
        # The SQLite template is cheap and also checks the migrations run before any file.
        engine = db.create_engine(f"sqlite:///{self.template}")
        placement_db.sync(engine)
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        engine.dispose()
        self._app: Any = None
        self._engine: Any = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(WSGIBridge(self._dispatch, threads=8,
                                           max_body_bytes=DEFAULT_MAX_BODY_BYTES),
                                host="127.0.0.1",
                                port=self.port, log_level="error", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def _dispatch(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self._app(environ, start_response)

    @contextlib.contextmanager
    def serving(self, name: str, fixture: Fixture, rules: dict[str, str] | None) -> Iterator[str]:
        from stratus.placement import service
        from stratus.placement.http.app import build_wsgi

        with self._fresh_database(name) as db_url:
            config = self._config(name, fixture, rules, db_url)
            # make_app() without losing the engine, which must be closed before a DROP.
            placement = service.make_placement(config, sync=False)
            self._app = build_wsgi(placement)
            try:
                yield self.url
            finally:
                self._app = None
                placement.engine.dispose()

    def _config(self, name: str, fixture: Fixture, rules: dict[str, str] | None,
                db_url: str) -> Any:
        from stratus import config as configuration

        overrides: dict[tuple[str, str], Any] = {
            ("placement_database", "connection"): db_url,
            ("api", "auth_strategy"): "noauth2",
            ("oslo_policy", "enforce_new_defaults"): fixture.new_defaults,
            # A file that cannot exist, so an /etc policy never leaks in.
            ("oslo_policy", "policy_file"): os.path.join(self.workdir, "no-policy.yaml"),
        }
        if rules is not None:
            policy_file = os.path.join(self.workdir, f"{name}.policy.json")
            with open(policy_file, "w", encoding="utf-8") as fh:
                json.dump(rules, fh)
            overrides[("oslo_policy", "policy_file")] = policy_file
        if fixture.cors:
            overrides[("cors", "allowed_origin")] = [CORS_ORIGIN]
            overrides[("cors", "allow_headers")] = [CORS_HEADERS]
        return configuration.load([], environ={}, overrides=overrides)

    @contextlib.contextmanager
    def _fresh_database(self, name: str) -> Iterator[str]:
        import sqlalchemy as sa

        from stratus.placement import db as placement_db
        from stratus.storage import engine as db

        if not self.server_url:
            path = os.path.join(self.workdir, f"{name}.db")
            shutil.copy(self.template, path)
            try:
                yield f"sqlite:///{path}"
            finally:
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(OSError):
                        os.remove(path + suffix)
            return
        scratch = f"stratus_gabbi_{os.getpid()}_{int(time.time() * 1000) % 10**8}"
        admin = db.create_engine(self.server_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {scratch}")
        url = sa.engine.make_url(db.normalize_url(self.server_url)).set(database=scratch)
        db_url = url.render_as_string(hide_password=False)
        try:
            engine = db.create_engine(db_url)
            placement_db.sync(engine)
            engine.dispose()
            yield db_url
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {scratch}")
            admin.dispose()

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class PeerTarget:
    """openstack-placement itself, one gunicorn per file: checks the harness, not Stratus."""

    def __init__(self, workdir: str, peer_venv: str) -> None:
        self.workdir = workdir
        self.gunicorn = os.path.join(peer_venv, "bin", "gunicorn")
        if not os.path.exists(self.gunicorn):
            raise SystemExit(f"no gunicorn in {peer_venv}: install openstack-placement "
                             f"{PEER_VERSION} and gunicorn there (see shared/PEER.md)")

    @contextlib.contextmanager
    def serving(self, name: str, fixture: Fixture, rules: dict[str, str] | None) -> Iterator[str]:
        port = free_port()
        env = {**os.environ, "PYTHONHASHSEED": "0",
               "OS_PLACEMENT_DATABASE__CONNECTION": f"sqlite:///{self.workdir}/{name}.db",
               "OS_PLACEMENT_DATABASE__SYNC_ON_STARTUP": "True",
               "OS_API__AUTH_STRATEGY": "noauth2",
               "OS_OSLO_POLICY__ENFORCE_NEW_DEFAULTS": str(fixture.new_defaults),
               "OS_OSLO_POLICY__POLICY_FILE": f"{self.workdir}/{name}.policy.json"}
        if rules is not None:
            with open(f"{self.workdir}/{name}.policy.json", "w", encoding="utf-8") as fh:
                json.dump(rules, fh)
        if fixture.cors:
            env["OS_CORS__ALLOWED_ORIGIN"] = CORS_ORIGIN
            env["OS_CORS__ALLOW_HEADERS"] = CORS_HEADERS
        log = open(f"{self.workdir}/{name}.gunicorn.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [self.gunicorn, "-w", "1", "-b", f"127.0.0.1:{port}", "placement.wsgi.api:application"],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_for(url, proc)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()


class CLITarget:
    """``stratus placement-api`` as a user starts it, one process per file (slower)."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.stratus = os.path.join(os.path.dirname(sys.executable), "stratus")

    @contextlib.contextmanager
    def serving(self, name: str, fixture: Fixture, rules: dict[str, str] | None) -> Iterator[str]:
        port = free_port()
        policy_file = f"{self.workdir}/{name}.policy.json"
        if rules is not None:
            with open(policy_file, "w", encoding="utf-8") as fh:
                json.dump(rules, fh)
        conf = [f"[api]\nauth_strategy = noauth2\n[oslo_policy]\npolicy_file = {policy_file}",
                f"enforce_new_defaults = {fixture.new_defaults}"]
        if fixture.cors:
            conf.append(f"[cors]\nallowed_origin = {CORS_ORIGIN}\nallow_headers = {CORS_HEADERS}")
        conf_file = f"{self.workdir}/{name}.conf"
        with open(conf_file, "w", encoding="utf-8") as fh:
            fh.write("\n".join(conf) + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        log = open(f"{self.workdir}/{name}.server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [self.stratus, "placement-api", "--config-file", conf_file, "--port", str(port),
             "--db", f"sqlite:///{self.workdir}/{name}.db"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_for(url, proc)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()


def _wait_for(url: str, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url + "/", timeout=2)
            return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {seconds}s")


# ---------------------------------------------------------------------------
# Running files and reporting.
# ---------------------------------------------------------------------------


@dataclass
class FileResult:
    file: str
    status: str  # pass | fail | setup-error | unsupported | error
    fixtures: list[str]
    passed: int = 0
    failed: int = 0
    detail: str = ""
    tests: list[dict[str, Any]] = field(default_factory=list)


class Worker:
    """The gabbi subprocess: one YAML file per request, results as JSON lines."""

    def __init__(self, venv: str) -> None:
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
            env.pop(var, None)
        self.proc = subprocess.Popen(
            [venv_python(venv), os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=env)

    def run(self, path: str, url: str, env: dict[str, str]) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"file": path, "url": url, "env": env}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"gabbi worker exited ({self.proc.poll()})")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def run_file(target: Any, worker: Worker, path: str) -> FileResult:
    name = os.path.basename(path)
    names = fixture_names(path)
    result = FileResult(name, "pass", names)
    unknown = [n for n in names if n not in FIXTURES]
    if unknown:
        result.status, result.detail = "unsupported", f"unknown fixture(s): {', '.join(unknown)}"
        return result
    fixtures = [FIXTURES[n] for n in names]
    if reasons := [f.unsupported for f in fixtures if f.unsupported]:
        result.status, result.detail = "unsupported", "; ".join(reasons)
        return result
    merged = Fixture(new_defaults=any(f.new_defaults for f in fixtures),
                     open_policy=any(f.open_policy for f in fixtures),
                     cors=any(f.cors for f in fixtures))
    rules = open_policy_rules() if merged.open_policy else None
    with target.serving(name.removesuffix(".yaml"), merged, rules) as url:
        builder = Builder(url)
        builder.env.update(base_env())
        try:
            for fixture in fixtures:
                if fixture.setup:
                    fixture.setup(builder)
        except SetupError as exc:
            result.status, result.detail = "setup-error", str(exc)
            return result
        finally:
            builder.close()
        answer = worker.run(path, url, builder.env)
    result.tests = answer["tests"]
    for t in result.tests:
        if reason := HARNESS_SKIPS.get((name, t["name"])):
            t["status"], t["detail"] = "skip", f"harness limitation: {reason}"
    result.passed = sum(1 for t in result.tests if t["status"] in ("pass", "skip"))
    result.failed = len(result.tests) - result.passed
    if answer.get("error"):
        result.status, result.detail = "error", answer["error"]
    elif result.failed:
        result.status = "fail"
    return result


def run_files(paths: list[str], target: Any, venv: str,
              progress: Callable[[FileResult], None] | None = None) -> list[FileResult]:
    worker = Worker(venv)
    results = []
    try:
        for path in paths:
            try:
                res = run_file(target, worker, path)
            except Exception as exc:  # one broken file must not stop the rest
                res = FileResult(os.path.basename(path), "error", fixture_names(path),
                                 detail=f"{type(exc).__name__}: {exc}")
            results.append(res)
            if progress:
                progress(res)
    finally:
        worker.close()
    return results


def format_file_line(r: FileResult) -> str:
    total = r.passed + r.failed
    counts = f"{r.passed}/{total}" if total else "-"
    extra = f"  ({r.detail.splitlines()[0][:160]})" if r.detail else ""
    return f"{r.status.upper():12} {counts:>8}  {r.file}{extra}"


def format_tests(r: FileResult, everything: bool = False) -> str:
    """Each failing test with what it asked and got; with ``everything``, passes too."""
    lines = []
    for t in r.tests:
        if t["status"] in ("pass", "skip"):
            if everything:
                lines.append(f"  {t['status']}: {t['name']}")
            continue
        got = t["actual_status"] or "?"
        lines.append(f"  - {t['name']}: {t['method']} {t['url']} expected {t['expected_status']}"
                     f" got {got}")
        lines.extend("      " + d for d in t["detail"].splitlines()[:12])
    return "\n".join(lines)


def summarize(t: dict[str, Any]) -> str:
    """One line for a failing test: the status mismatch, else the assertion's first line."""
    if t["actual_status"] and t["actual_status"] not in t["expected_status"].split("||"):
        return f"expected {t['expected_status']}, got {t['actual_status']}"
    for line in t["detail"].splitlines():
        line = line.strip().removeprefix("AssertionError: ")
        if line.endswith(" not found in {"):
            line = line[: -len(" in {")] + " in the response body"
        if line:
            return line
    return t["status"]


def markdown(results: list[FileResult]) -> str:
    files_ok = sum(1 for r in results if r.status == "pass")
    tests_ok = sum(r.passed for r in results)
    tests = sum(r.passed + r.failed for r in results)
    rows = ["| file | fixtures | result | tests passed | note |",
            "| --- | --- | --- | --- | --- |"]
    details: list[str] = []
    for r in results:
        failing = [t for t in r.tests if t["status"] not in ("pass", "skip")]
        note = r.detail.splitlines()[0][:140] if r.detail else ""
        rows.append(f"| {r.file} | {', '.join(r.fixtures)} | {r.status} | "
                    f"{r.passed}/{r.passed + r.failed} | {_cell(note)} |")
        for t in failing:
            details.append(f"- `{r.file}` {t['name']} ({t['method']} "
                           f"`{_cell(t['url'])[:120]}`): {_cell(summarize(t))[:300]}")
    head = (f"**{files_ok}/{len(results)} files pass; {tests_ok}/{tests} tests pass** "
            f"(openstack-placement {PEER_VERSION} gabbits against Stratus, "
            f"{time.strftime('%Y-%m-%d')}).\n\n")
    tail = ("\n\nFailing tests:\n\n" + "\n".join(details)) if details else ""
    return head + "\n".join(rows) + tail + "\n"


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _cell(text: str) -> str:
    # Fixture uuids are new every run: masking them keeps the generated page's diffs real.
    return _UUID.sub("{uuid}", text).replace("|", "\\|").replace("\n", " ")


BEGIN, END = "<!-- gabbi-compat:begin -->", "<!-- gabbi-compat:end -->"


def write_markdown(path: str, results: list[FileResult]) -> None:
    """Replace the generated block of ``path`` (between the markers), keeping the prose."""
    block = f"{BEGIN}\n{markdown(results)}{END}"
    text = f"{BEGIN}\n{END}\n"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def select(gabbits: str, wanted: list[str]) -> list[str]:
    everything = sorted(glob.glob(os.path.join(gabbits, "*.yaml")))
    if not wanted:
        return everything
    chosen = []
    for w in wanted:
        matches = [p for p in everything
                   if os.path.basename(p) in (w, f"{w}.yaml") or fnmatch.fnmatch(
                       os.path.basename(p), w)]
        if not matches:
            raise SystemExit(f"no gabbi file matches {w!r} in {gabbits}")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="YAML file names or globs (default: all)")
    parser.add_argument("--venv", default=DEFAULT_VENV,
                        help="gabbi virtualenv (created if missing)")
    parser.add_argument("--gabbits", help="directory of YAML files (default: the venv's peer)")
    parser.add_argument("--target", choices=["stratus", "cli", "peer"], default="stratus",
                        help="stratus: in-process server (default); cli: one `stratus "
                             "placement-api` per file; peer: openstack-placement itself")
    parser.add_argument("--peer-venv", default="/work/peer/venv")
    parser.add_argument("--db-server", metavar="URL",
                        help="run Stratus on PostgreSQL or MariaDB: a server URL under which a "
                             "scratch database is created per file (e.g. "
                             "postgresql://postgres@127.0.0.1:5432/postgres)")
    parser.add_argument("--json", help="write every result, per test, to this file")
    parser.add_argument("--markdown", help="update the generated table in this Markdown file")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="print each failing test (-vv: every test)")
    parser.add_argument("--setup-only", action="store_true",
                        help="only create the gabbi virtualenv and print the YAML directory")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker()

    ensure_venv(args.venv)
    gabbits = args.gabbits or find_gabbits(args.venv)
    if not gabbits:
        raise SystemExit(f"no {GABBITS_REL} under {args.venv}")
    if args.setup_only:
        print(gabbits)
        return 0
    paths = select(gabbits, args.files)

    def progress(r: FileResult) -> None:
        print(format_file_line(r), flush=True)
        if args.verbose > 1 or (args.verbose and r.status != "pass"):
            print(format_tests(r, everything=args.verbose > 1), flush=True)

    with tempfile.TemporaryDirectory(prefix="gabbi-compat-") as workdir:
        if args.target == "peer":
            target: Any = PeerTarget(workdir, args.peer_venv)
        elif args.target == "cli":
            target = CLITarget(workdir)
        else:
            import logging

            # Setup failures and test failures are reported here; keep the server quiet.
            logging.disable(logging.CRITICAL)
            target = StratusTarget(workdir, args.db_server)
        try:
            results = run_files(paths, target, args.venv, progress)
        finally:
            if isinstance(target, StratusTarget):
                target.close()

    files_ok = sum(1 for r in results if r.status == "pass")
    tests_ok = sum(r.passed for r in results)
    tests = sum(r.passed + r.failed for r in results)
    print(f"files: {files_ok} passed, {len(results) - files_ok} failed")
    print(f"tests: {tests_ok} passed, {tests - tests_ok} failed")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([asdict(r) for r in results], fh, indent=1)
    if args.markdown:
        write_markdown(args.markdown, results)
    return 0 if files_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
