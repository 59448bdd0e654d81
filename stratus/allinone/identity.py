"""``stratus serve``'s identity and image services, and the files OpenStack clients read.

The first start makes the token keys, the identity database with an ``admin`` user and
project and a ``demo`` user and project (random passwords), and writes ``clouds.yaml``
(clouds ``stratus`` and ``stratus-demo``) and ``openrc`` (the admin, as ``source``-able
variables) into the data directory, readable by its owner only. Later starts reuse the
passwords those files hold. Every API of the serve accepts the identity's tokens (and
still the noauth2 ``admin`` token Stratus's own clients use).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import Engine

from stratus import config as configuration
from stratus.identity import service as identity_service
from stratus.identity import store
from stratus.identity.http.app import IdentityDeps
from stratus.identity.middleware import TokenValidator, accept_identity_tokens
from stratus.storage import engine as db

CLOUD, DEMO_CLOUD = "stratus", "stratus-demo"


@dataclass
class Identity:
    deps: IdentityDeps
    validator: TokenValidator
    passwords: dict[str, str] = field(default_factory=dict)
    url: str = ""          # the identity endpoint (…/v3) once it listens

    def guard(self, app: Any, service: str | None = None) -> Any:
        """``app`` (of service type ``service``) accepting identity tokens (their 401
        names the identity URL)."""
        return accept_identity_tokens(app, self.validator, self.url or "identity", service)


def keystone_guard(config: configuration.Config) -> Any:
    """With ``[api] auth_strategy = keystone``: each served API behind keystonemiddleware
    (``[keystone_authtoken]``, a real Keystone), the caller it validated handed on in the
    noauth2 form the in-process APIs run with (their own clients never pass the
    middleware)."""
    from stratus.api.http.handlers.console import PUBLIC_PATHS
    from stratus.placement.http.keystone import wrap_keystone

    def guard(app: Any, service: str | None = None) -> Any:
        def as_noauth(environ: dict[str, Any], start_response: Any) -> Any:
            user = environ.get("HTTP_X_USER_ID")
            if user and environ.get("HTTP_X_IDENTITY_STATUS", "Confirmed") == "Confirmed":
                project = environ.get("HTTP_X_PROJECT_ID") or user
                environ["HTTP_X_AUTH_TOKEN"] = f"{user}:{project}"
            return app(environ, start_response)
        return wrap_keystone(as_noauth, config, public_paths=PUBLIC_PATHS)

    return guard


def start_identity(config: configuration.Config, data_dir: Path) -> Identity:
    engine: Engine = db.create_engine(identity_service.db_url(config))
    deps = identity_service.make_deps(config, engine)
    passwords = _known_passwords(data_dir)
    for user in ("admin", "demo"):
        passwords.setdefault(user, secrets.token_urlsafe(12))
    with db.write(engine) as conn:
        store.bootstrap(conn, passwords["admin"], demo_password=passwords["demo"])
    return Identity(deps, identity_service.validator(deps), passwords)


def _known_passwords(data_dir: Path) -> dict[str, str]:
    path = data_dir / "clouds.yaml"
    try:
        clouds = yaml.safe_load(path.read_text()).get("clouds", {})
        return {"admin": str(clouds[CLOUD]["auth"]["password"]),
                "demo": str(clouds[DEMO_CLOUD]["auth"]["password"])}
    except (OSError, AttributeError, KeyError, TypeError, yaml.YAMLError):
        return {}


def _cloud(auth_url: str, user: str, password: str, region: str) -> dict[str, Any]:
    return {"auth": {"auth_url": auth_url, "username": user, "password": password,
                     "project_name": user, "user_domain_name": "Default",
                     "project_domain_name": "Default"},
            "region_name": region, "identity_api_version": 3, "interface": "public"}


def write_client_files(data_dir: Path, identity: Identity, region: str) -> tuple[Path, Path]:
    """``clouds.yaml`` and ``openrc`` for the admin (and the demo user in clouds.yaml)."""
    clouds = {"clouds": {
        CLOUD: _cloud(identity.url, "admin", identity.passwords["admin"], region),
        DEMO_CLOUD: _cloud(identity.url, "demo", identity.passwords["demo"], region)}}
    clouds_path, openrc_path = data_dir / "clouds.yaml", data_dir / "openrc"
    _private_write(clouds_path, "# Written by stratus serve: OS_CLIENT_CONFIG_FILE=this "
                   "file, OS_CLOUD=stratus (or stratus-demo)\n"
                   + yaml.safe_dump(clouds, sort_keys=False))
    _private_write(openrc_path, "".join(f"export {k}={v}\n" for k, v in (
        ("OS_AUTH_URL", identity.url), ("OS_USERNAME", "admin"),
        ("OS_PASSWORD", identity.passwords["admin"]), ("OS_PROJECT_NAME", "admin"),
        ("OS_USER_DOMAIN_NAME", "Default"), ("OS_PROJECT_DOMAIN_NAME", "Default"),
        ("OS_REGION_NAME", region), ("OS_IDENTITY_API_VERSION", "3"))))
    return clouds_path, openrc_path


def _private_write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".new")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(partial, path)
