"""Who the ``stratus`` client is: credentials found as the OpenStack clients find them.

The order, first match wins:

1. ``--token``/``$STRATUS_TOKEN``: a noauth2 token ``user[:project]``, sent as it is (a
   Placement-only set-up, or a deployment running ``[api] auth_strategy = noauth2``);
2. ``--os-cloud``/``$OS_CLOUD``: that cloud of a ``clouds.yaml`` (``$OS_CLIENT_CONFIG_FILE``,
   ``./clouds.yaml``, ``~/.config/openstack/clouds.yaml``, ``/etc/openstack/clouds.yaml``:
   openstacksdk's places, in its order);
3. ``$OS_AUTH_URL`` and the other ``OS_*`` variables (an ``openrc``);
4. beside ``stratus serve``'s data directory (``$STRATUS_DATA_DIR`` or ``./data``): the cloud
   ``stratus`` of the ``clouds.yaml`` serve wrote there, so that ``stratus`` and
   ``openstack`` act as the same user in the same project with no flags;
5. nothing found: the noauth2 token ``admin``.

Keystone v3 authentication (password, token or application credential) gives a project
scoped token and the service catalog; the endpoints come from the catalog (interface
``public`` unless the cloud says otherwise, its region) unless a URL flag or
``$STRATUS_*_URL`` names one. Written here rather than with keystoneauth1 and
openstacksdk's config loader: the client needs one POST and a dictionary lookup, and
those libraries would bring requests, stevedore and pbr into every installation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

NOAUTH_TOKEN = "admin"
SERVE_CLOUD = "stratus"
# openstacksdk's search path for clouds.yaml, after $OS_CLIENT_CONFIG_FILE.
CLOUDS_YAML_PLACES = ("clouds.yaml", "~/.config/openstack/clouds.yaml",
                      "/etc/openstack/clouds.yaml")
NOAUTH_TYPES = ("none", "noauth", "admin_token")


class AuthError(Exception):
    """Credentials that cannot be used: one line saying which and why."""


@dataclass(frozen=True)
class Cloud:
    """What authenticating needs: clouds.yaml's ``auth`` block and a few settings."""

    source: str                         # where it came from, for messages
    auth: Mapping[str, Any]
    auth_type: str = "password"
    region: str | None = None
    interface: str = "public"
    verify: bool | str = True


@dataclass(frozen=True)
class Identity:
    """A token to send and where the services are."""

    token: str
    source: str
    endpoints: dict[str, str] = field(default_factory=dict)   # service type -> URL
    user: str | None = None
    project_id: str | None = None
    project_name: str | None = None
    keystone: bool = False

    @property
    def identity_url(self) -> str | None:
        return self.endpoints.get("identity")

    def describe(self) -> str:
        """Who, for a refusal: ``user admin in project admin (cloud 'stratus' of ...)``."""
        if self.keystone:
            return f"user {self.user} in project {self.project_name} ({self.source})"
        return self.source


# ---- finding the cloud --------------------------------------------------------------


def _load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise AuthError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise AuthError(f"{path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise AuthError(f"{path} holds no 'clouds' mapping")
    return data


def _clouds_files(env: Mapping[str, str], cwd: Path) -> list[Path]:
    named = env.get("OS_CLIENT_CONFIG_FILE")
    places = [Path(named)] if named else []
    places += [(cwd / p) if not p.startswith(("~", "/")) else Path(p).expanduser()
               for p in CLOUDS_YAML_PLACES]
    return [p for p in places if p.is_file()]


def _cloud_from(path: Path, name: str) -> Cloud | None:
    clouds = _load_yaml(path).get("clouds") or {}
    entry = clouds.get(name) if isinstance(clouds, dict) else None
    if not isinstance(entry, dict):
        return None
    return Cloud(source=f"cloud {name!r} of {path}", auth=dict(entry.get("auth") or {}),
                 auth_type=str(entry.get("auth_type") or "password"),
                 region=entry.get("region_name"),
                 interface=str(entry.get("interface") or "public"),
                 verify=entry.get("cacert") or entry.get("verify", True))


_ENV_AUTH = ("auth_url", "username", "user_id", "password", "project_name", "project_id",
             "user_domain_name", "user_domain_id", "project_domain_name",
             "project_domain_id", "domain_name", "domain_id", "token",
             "application_credential_id", "application_credential_secret",
             "application_credential_name")


def _cloud_from_env(env: Mapping[str, str]) -> Cloud:
    auth = {k: env[f"OS_{k.upper()}"] for k in _ENV_AUTH if env.get(f"OS_{k.upper()}")}
    # openrc files often say OS_TENANT_NAME (identity v2's word for a project).
    if "project_name" not in auth and env.get("OS_TENANT_NAME"):
        auth["project_name"] = env["OS_TENANT_NAME"]
    return Cloud(source="the OS_* environment variables", auth=auth,
                 auth_type=env.get("OS_AUTH_TYPE") or "password",
                 region=env.get("OS_REGION_NAME") or None,
                 interface=env.get("OS_INTERFACE") or "public",
                 verify=env.get("OS_CACERT") or True)


def serve_clouds_yaml(env: Mapping[str, str], cwd: Path) -> Path | None:
    """The clouds.yaml ``stratus serve`` wrote into the data directory next to us."""
    data_dir = Path(env["STRATUS_DATA_DIR"]) if env.get("STRATUS_DATA_DIR") else cwd / "data"
    path = data_dir / "clouds.yaml"
    return path if path.is_file() else None


def find_cloud(cloud_name: str | None, env: Mapping[str, str], cwd: Path) -> Cloud | None:
    """The cloud to authenticate to (see the module), or None for noauth2."""
    if cloud_name:
        for path in _clouds_files(env, cwd):
            found = _cloud_from(path, cloud_name)
            if found is not None:
                return found
        serve = serve_clouds_yaml(env, cwd)
        if serve is not None and (found := _cloud_from(serve, cloud_name)) is not None:
            return found
        looked = [str(p) for p in _clouds_files(env, cwd)] + ([str(serve)] if serve else [])
        raise AuthError(f"no cloud named {cloud_name!r} in "
                        + (", ".join(looked) if looked else "any clouds.yaml (none found: "
                           "set OS_CLIENT_CONFIG_FILE)"))
    if env.get("OS_AUTH_URL"):
        return _cloud_from_env(env)
    serve = serve_clouds_yaml(env, cwd)
    if serve is not None:
        return _cloud_from(serve, SERVE_CLOUD)
    return None


# ---- Keystone v3 --------------------------------------------------------------------


def _domain(auth: Mapping[str, Any], kind: str) -> dict[str, str]:
    if auth.get(f"{kind}_domain_id"):
        return {"id": str(auth[f"{kind}_domain_id"])}
    name = auth.get(f"{kind}_domain_name") or auth.get("domain_name")
    if name:
        return {"name": str(name)}
    if auth.get("domain_id"):
        return {"id": str(auth["domain_id"])}
    return {"id": "default"}


def auth_body(cloud: Cloud) -> dict[str, Any]:
    """The body of ``POST /v3/auth/tokens`` for ``cloud``."""
    a = cloud.auth
    kind = cloud.auth_type.replace("-", "_")
    if kind in ("password", "v3password"):
        if not (a.get("username") or a.get("user_id")) or not a.get("password"):
            raise AuthError(f"{cloud.source}: password authentication needs a username "
                            "(or user_id) and a password")
        user: dict[str, Any] = {"password": str(a["password"])}
        if a.get("user_id"):
            user["id"] = str(a["user_id"])
        else:
            user.update(name=str(a["username"]), domain=_domain(a, "user"))
        identity: dict[str, Any] = {"methods": ["password"], "password": {"user": user}}
    elif kind in ("token", "v3token"):
        if not a.get("token"):
            raise AuthError(f"{cloud.source}: token authentication needs a token")
        identity = {"methods": ["token"], "token": {"id": str(a["token"])}}
    elif kind == "v3applicationcredential":
        if not a.get("application_credential_id") or \
                not a.get("application_credential_secret"):
            raise AuthError(f"{cloud.source}: an application credential needs "
                            "application_credential_id and application_credential_secret")
        return {"auth": {"identity": {"methods": ["application_credential"],
                                      "application_credential": {
                                          "id": str(a["application_credential_id"]),
                                          "secret": str(a["application_credential_secret"])}}}}
    else:
        raise AuthError(f"{cloud.source}: auth_type {cloud.auth_type!r} is not supported "
                        "(password, token, v3applicationcredential)")
    body: dict[str, Any] = {"auth": {"identity": identity}}
    if a.get("project_id"):
        body["auth"]["scope"] = {"project": {"id": str(a["project_id"])}}
    elif a.get("project_name"):
        body["auth"]["scope"] = {"project": {"name": str(a["project_name"]),
                                             "domain": _domain(a, "project")}}
    return body


def pick_endpoints(catalog: list[dict[str, Any]], interface: str,
                   region: str | None) -> dict[str, str]:
    """service type -> URL, for ``interface`` in ``region`` (any region if none given)."""
    found: dict[str, str] = {}
    for service in catalog:
        for ep in service.get("endpoints") or []:
            if ep.get("interface") != interface:
                continue
            if region and region not in (ep.get("region"), ep.get("region_id")):
                continue
            found.setdefault(str(service.get("type")), str(ep["url"]))
    return found


def authenticate(cloud: Cloud, timeout: float = 30.0) -> Identity:
    """A project-scoped Keystone token and the catalog's endpoints, or an AuthError."""
    if cloud.auth_type in NOAUTH_TYPES:
        token = str(cloud.auth.get("token") or NOAUTH_TOKEN)
        endpoint = cloud.auth.get("endpoint")
        return Identity(token, f"{cloud.source} (noauth2 token)",
                        {"placement": str(endpoint)} if endpoint else {})
    auth_url = cloud.auth.get("auth_url")
    if not auth_url:
        raise AuthError(f"{cloud.source}: no auth_url")
    from stratus.web.service_token import tokens_url

    url = tokens_url(str(auth_url))
    try:
        resp = httpx.post(url, json=auth_body(cloud), timeout=timeout, verify=cloud.verify,
                          headers={"Accept": "application/json"})
    except httpx.ConnectError as exc:
        raise AuthError(f"cannot reach the identity service at {auth_url} ({exc}); is it "
                        f"running? (credentials from {cloud.source})") from None
    except httpx.HTTPError as exc:
        raise AuthError(f"identity service at {auth_url}: {type(exc).__name__}: {exc}") \
            from None
    if resp.status_code >= 400:
        try:
            why = str(resp.json()["error"]["message"])
        except (ValueError, KeyError, TypeError):
            why = " ".join(resp.text.split())[:200]
        raise AuthError(f"the identity service at {auth_url} refused the credentials of "
                        f"{cloud.source}: {resp.status_code} {why}")
    token = resp.headers.get("X-Subject-Token")
    try:
        data = resp.json()["token"]
    except (ValueError, KeyError, TypeError):
        data = None
    if not token or not isinstance(data, dict):
        raise AuthError(f"the identity service at {auth_url} answered no token")
    endpoints = pick_endpoints(list(data.get("catalog") or []), cloud.interface, cloud.region)
    endpoints.setdefault("identity", str(auth_url).rstrip("/"))
    project = data.get("project") or {}
    return Identity(token, cloud.source, endpoints,
                    user=(data.get("user") or {}).get("name"),
                    project_id=project.get("id"), project_name=project.get("name"),
                    keystone=True)


def resolve(token: str | None, cloud_name: str | None, env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> Identity:
    """Who the client is for this command (see the module's order)."""
    env = os.environ if env is None else env
    if token:
        return Identity(token, f"the noauth2 token {token} (--token or $STRATUS_TOKEN)")
    cloud = find_cloud(cloud_name, env, cwd or Path.cwd())
    if cloud is None:
        return Identity(NOAUTH_TOKEN, "the noauth2 token 'admin' (no OS_CLOUD, no OS_* "
                        "variables, no clouds.yaml of stratus serve in ./data)")
    return authenticate(cloud)


def noauth_project(token: str) -> str:
    """The project a noauth2 token ``user[:project]`` acts for (the user's own if none)."""
    user, _, project = token.partition(":")
    return project or user
