"""``[api] auth_strategy = keystone``: keystonemiddleware's auth_token in front of the app.

keystonemiddleware is an optional extra (``pip install 'stratus[keystone]'``).
It validates the ``X-Auth-Token`` against Keystone, strips any identity headers
the client sent, and sets ``X-Identity-Status``, ``X-User-Id``,
``X-Project-Id``, ``X-Roles`` and ``OpenStack-System-Scope`` for
:func:`stratus.placement.http.auth.keystone_context` to read.

Its options come from the ``[keystone_authtoken]`` section of the loaded INI
files (``www_authenticate_uri``, ``auth_type``, ``auth_url``, ``username``,
``memcached_servers``, ... exactly as in placement.conf), with
``OS_KEYSTONE_AUTHTOKEN__<OPTION>`` environment variables winning over the file,
as for every other option. A private oslo.config object backs the options the
section leaves unset, so nothing touches oslo.config's global ``CONF``.

``/`` (version discovery) passes without a token, as in Placement.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from stratus.config import Config, ConfigError

SECTION = "keystone_authtoken"
INSTALL_HINT = (
    "[api] auth_strategy = keystone needs keystonemiddleware, which is not installed: "
    "pip install 'stratus[keystone]' (or: pip install keystonemiddleware)"
)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Any]


def authtoken_options(
    config: Config, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The ``[keystone_authtoken]`` options: file values, then environment overrides."""
    environ = os.environ if environ is None else environ
    options = dict(config.section(SECTION))
    prefix = f"OS_{SECTION.upper()}__"
    for name, value in environ.items():
        if name.startswith(prefix) and len(name) > len(prefix):
            options[name[len(prefix):].lower()] = value
    return options


def _import_auth_token() -> Any:
    try:
        from keystonemiddleware import auth_token
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return auth_token


def wrap_keystone(app: WSGIApp, config: Config,
                  public_paths: frozenset[str] = frozenset()) -> WSGIApp:
    """``app`` behind auth_token; raises :class:`ConfigError` if it cannot be set up.
    ``/`` and ``public_paths`` pass without a token (the app decides what they show)."""
    auth_token = _import_auth_token()
    from oslo_config import cfg

    # keystonemiddleware registers its options (and the auth plugin's) on this
    # object; the values we pass in as "paste" options take precedence over it.
    private_conf = cfg.ConfigOpts()
    private_conf([], project="stratus", default_config_files=[], default_config_dirs=[])

    class RootBypassingAuthProtocol(auth_token.AuthProtocol):
        """auth_token for every path except ``/``, which anyone may read."""

        def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            path = environ.get("PATH_INFO", "")
            if path in ("", "/") or path.rstrip("/") in public_paths:
                return app(environ, start_response)
            return super().__call__(environ, start_response)

    options: dict[str, Any] = dict(authtoken_options(config))
    options["oslo_config_config"] = private_conf
    try:
        return RootBypassingAuthProtocol(app, options)
    except Exception as exc:  # keystonemiddleware raises many kinds
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"[{SECTION}] cannot be used: {detail}") from None
