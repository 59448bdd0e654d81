"""The real Keystone (``keystone`` from PyPI) for tests: installed once into a cached
virtualenv (``$STRATUS_KEYSTONE_VENV``, default ~/.cache/stratus/keystone-venv), set up as
an operator does (SQLite, ``keystone-manage db_sync``, ``fernet_setup``,
``credential_setup``, ``bootstrap``), served by gunicorn on a free loopback port, and given
a service user and the catalog of a Stratus deployment through its own API."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.functional.cli_helpers import free_port

DEFAULT_VENV = Path.home() / ".cache" / "stratus" / "keystone-venv"
PACKAGES = ["keystone", "gunicorn"]
ADMIN_PASSWORD, SERVICE_PASSWORD = "keystone-admin", "stratus-service"
# keystone parses sys.argv at import: keep gunicorn's flags away from it.
SHIM = ("import sys\nsys.argv = sys.argv[:1]\n"
        "from keystone.wsgi.api import application  # noqa: E402,F401\n")


class Unavailable(Exception):
    pass


def ensure_venv() -> Path:
    venv = Path(os.environ.get("STRATUS_KEYSTONE_VENV") or DEFAULT_VENV)
    manage = venv / "bin" / "keystone-manage"
    if manage.exists() and (venv / "bin" / "gunicorn").exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    for cmd in ([sys.executable, "-m", "venv", "--clear", str(venv)],
                [str(venv / "bin" / "pip"), "install", "--quiet",
                 "--disable-pip-version-check", *PACKAGES]):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"{' '.join(cmd[:3])}: {exc}") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise Unavailable(f"installing keystone failed: {last}")
    return venv


@dataclass
class Keystone:
    url: str            # http://127.0.0.1:PORT (the /v3 API under it)
    admin_password: str = ADMIN_PASSWORD

    def admin_token(self) -> str:
        resp = httpx.post(f"{self.url}/v3/auth/tokens", timeout=30, json={"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": "admin", "domain": {"id": "default"},
                "password": self.admin_password}}},
            "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
        resp.raise_for_status()
        return resp.headers["X-Subject-Token"]

    def register(self, endpoints: Mapping[str, str]) -> None:
        """A ``stratus`` service user (admin and service roles in project ``service``) and
        the catalog: service type -> URL, public/internal/admin."""
        h = {"X-Auth-Token": self.admin_token()}
        with httpx.Client(base_url=f"{self.url}/v3", headers=h, timeout=30) as http:
            def made(path: str, body: dict[str, object], key: str) -> str:
                resp = http.post(path, json=body)
                assert resp.status_code == 201, resp.text
                return str(resp.json()[key]["id"])

            project = made("/projects", {"project": {"name": "service",
                                                     "domain_id": "default"}}, "project")
            user = made("/users", {"user": {"name": "stratus", "password": SERVICE_PASSWORD,
                                            "domain_id": "default",
                                            "default_project_id": project}}, "user")
            roles = {r["name"]: r["id"] for r in http.get("/roles").json()["roles"]}
            if "service" not in roles:
                roles["service"] = made("/roles", {"role": {"name": "service"}}, "role")
            for role in ("admin", "service"):
                assert http.put(f"/projects/{project}/users/{user}/roles/"
                                f"{roles[role]}").status_code == 204
            names = {"compute": "nova", "placement": "placement", "network": "neutron",
                     "image": "glance"}
            for kind, url in endpoints.items():
                service = made("/services", {"service": {"type": kind,
                                                         "name": names[kind]}}, "service")
                for interface in ("public", "internal", "admin"):
                    made("/endpoints", {"endpoint": {
                        "service_id": service, "interface": interface, "url": url,
                        "region_id": "RegionOne"}}, "endpoint")

    def authtoken_env(self) -> dict[str, str]:
        """``[keystone_authtoken]`` for Stratus's APIs, as environment variables."""
        options = {"www_authenticate_uri": self.url, "auth_url": self.url,
                   "auth_type": "password", "username": "stratus",
                   "password": SERVICE_PASSWORD, "project_name": "service",
                   "user_domain_name": "Default", "project_domain_name": "Default"}
        return {f"OS_KEYSTONE_AUTHTOKEN__{k.upper()}": v for k, v in options.items()}

    def clouds_yaml(self, path: Path) -> Path:
        path.write_text(
            "clouds:\n  keystone:\n    auth:\n"
            f"      auth_url: {self.url}/v3\n      username: admin\n"
            f"      password: {self.admin_password}\n      project_name: admin\n"
            "      user_domain_name: Default\n      project_domain_name: Default\n"
            "    region_name: RegionOne\n    identity_api_version: 3\n")
        return path


@contextmanager
def running_keystone(workdir: Path) -> Iterator[Keystone]:
    venv = ensure_venv()
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    conf = workdir / "keystone.conf"
    conf.write_text(
        f"[DEFAULT]\nlog_dir = {workdir}\n"
        f"[database]\nconnection = sqlite:///{workdir}/keystone.db\n"
        "[token]\nprovider = fernet\n"
        f"[fernet_tokens]\nkey_repository = {workdir}/fernet-keys\n"
        f"[fernet_receipts]\nkey_repository = {workdir}/fernet-receipts\n"
        f"[credential]\nkey_repository = {workdir}/credential-keys\n")
    manage = [str(venv / "bin" / "keystone-manage"), "--config-file", str(conf)]
    for args in (["db_sync"], ["fernet_setup", "--keystone-user", "root",
                               "--keystone-group", "root"],
                 ["credential_setup", "--keystone-user", "root", "--keystone-group", "root"],
                 ["bootstrap", "--bootstrap-password", ADMIN_PASSWORD,
                  "--bootstrap-admin-url", f"{url}/v3", "--bootstrap-public-url",
                  f"{url}/v3", "--bootstrap-internal-url", f"{url}/v3",
                  "--bootstrap-region-id", "RegionOne"]):
        done = subprocess.run([*manage, *args], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"keystone-manage {args[0]}: {done.stderr[-1500:]}")
    (workdir / "ks_wsgi.py").write_text(SHIM)
    log = open(workdir / "gunicorn.log", "w")   # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [str(venv / "bin" / "gunicorn"), "--chdir", str(workdir), "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--threads", "8", "--timeout", "300",
         "ks_wsgi:application"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, "OS_KEYSTONE_CONFIG_FILES": str(conf)}, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/v3", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("keystone did not start:\n"
                                     + (workdir / "gunicorn.log").read_text()[-3000:])
            time.sleep(0.5)
        yield Keystone(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
