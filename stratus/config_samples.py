"""Sample configuration files, one per role of a distributed deployment (``etc/stratus/``).

Generated from :data:`stratus.config.OPTIONS`, so they never drift from the options
the code reads: each role lists the options its process uses; each option is written
with its help text, its environment variable and its default, commented out unless
the deployment must set it (URLs of databases, the bus, the other services).
``tests/functional/test_sample_configs.py`` checks the files in ``etc/stratus/`` are
what this module writes; after adding an option, give it a role here and run
``python -m stratus.config_samples etc/stratus``.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from stratus.config import OPTIONS, Option

DB = "postgresql://stratus:DB_PASSWORD@db.example/stratus"
BUS = "amqp://stratus:RABBIT_PASSWORD@rabbit.example:5672/stratus"
POLICY = [("oslo_policy", n) for n in ("policy_file", "enforce_scope", "enforce_new_defaults")]
CORS = [("cors", n) for n in ("allowed_origin", "allow_credentials", "expose_headers",
                              "max_age", "allow_methods", "allow_headers")]
CLIENTS = [("placement_client", "endpoint"), ("placement_client", "token"),
           ("placement_client", "retry_seconds")]
SERVICE_USER = [("placement_client", n) for n in (
    "auth_url", "username", "password", "project_name", "user_domain_name",
    "project_domain_name")]
NETWORK_CLIENT = [("network_client", "endpoint"), ("network_client", "token"),
                  ("network_client", "retry_seconds")]
SIGNING = (("bus", "signing"), ("bus", "key_dir"), ("bus", "trust_store"),
           ("bus", "message_window"), ("bus", "unsigned_senders"))


@dataclass(frozen=True)
class Role:
    file: str
    title: str
    command: str
    options: tuple[tuple[str, str], ...]
    values: dict[tuple[str, str], str]


ROLES = (
    Role("placement-api.conf", "the Placement API",
         "stratus placement-api --config-file /etc/stratus/placement-api.conf "
         "--host 0.0.0.0 --workers 4",
         (("DEFAULT", "debug"), ("placement_database", "connection"),
          ("placement_database", "sync_on_startup"), ("api", "auth_strategy"),
          ("placement", "randomize_allocation_candidates"),
          ("placement", "max_allocation_candidates"),
          ("placement", "allocation_candidates_generation_strategy"),
          ("placement", "allocation_conflict_retry_count"),
          ("placement", "incomplete_consumer_project_id"),
          ("placement", "incomplete_consumer_user_id"),
          ("api_server", "max_body_bytes"), ("metrics", "enabled"), *POLICY, *CORS),
         {("placement_database", "connection"): f"{DB}_placement"}),
    Role("compute-api.conf", "the compute API",
         "stratus api --config-file /etc/stratus/compute-api.conf --host 0.0.0.0",
         (("DEFAULT", "debug"), ("DEFAULT", "transport_url"),
          ("DEFAULT", "rpc_response_timeout"), ("DEFAULT", "default_availability_zone"),
          ("DEFAULT", "internal_service_availability_zone"),
          ("DEFAULT", "allow_resize_to_same_host"), ("DEFAULT", "shelved_offload_time"),
          ("DEFAULT", "reclaim_instance_interval"), ("api", "enable_instance_password"),
          ("DEFAULT", "password_length"),
          ("api_database", "connection"), ("api", "auth_strategy"),
          ("api", "max_servers_per_request"), ("api", "max_limit"),
          ("api_server", "max_body_bytes"), ("metrics", "enabled"),
          *CLIENTS, *NETWORK_CLIENT, ("glance", "api_servers"), ("glance", "token"),
          ("compute", "service_down_time"), ("upgrade_levels", "compute"), *SIGNING,
          *((o.section, o.name) for o in OPTIONS if o.section == "quota"), *POLICY),
         {("DEFAULT", "transport_url"): BUS, ("api_database", "connection"): f"{DB}_api",
          ("placement_client", "endpoint"): "http://placement.example:8778",
          ("network_client", "endpoint"): "http://network.example:9696"}),
    Role("network-api.conf", "the network API",
         "stratus network-api --config-file /etc/stratus/network-api.conf --host 0.0.0.0",
         (("DEFAULT", "debug"), ("network_database", "connection"),
          ("network_database", "sync_on_startup"), ("network", "legacy_resource_request"),
          ("network", "binding_extended"), ("api", "auth_strategy"),
          ("api_server", "max_body_bytes"), ("metrics", "enabled"), *CLIENTS,
          *POLICY),
         {("network_database", "connection"): f"{DB}_network",
          ("placement_client", "endpoint"): "http://placement.example:8778"}),
    Role("scheduler.conf", "a scheduler",
         "stratus scheduler --config-file /etc/stratus/scheduler.conf",
         (("DEFAULT", "debug"), ("DEFAULT", "host"), ("DEFAULT", "transport_url"),
          ("DEFAULT", "default_availability_zone"), ("api_database", "connection"),
          *CLIENTS, ("compute", "report_interval"), ("compute", "service_down_time"),
          *((o.section, o.name) for o in OPTIONS if o.section == "scheduler"
            and o.name not in ("max_attempts", "claim_retries")), *SIGNING),
         {("DEFAULT", "transport_url"): BUS, ("api_database", "connection"): f"{DB}_api",
          ("placement_client", "endpoint"): "http://placement.example:8778"}),
    Role("conductor.conf", "a conductor (API level; a cell conductor differs only in "
         "transport_url: its cell's bus)",
         "stratus conductor --config-file /etc/stratus/conductor.conf",
         (("DEFAULT", "debug"), ("DEFAULT", "host"), ("DEFAULT", "transport_url"),
          ("DEFAULT", "rpc_response_timeout"), ("DEFAULT", "long_rpc_timeout"),
          ("api_database", "connection"), *CLIENTS,
          *NETWORK_CLIENT, ("compute", "report_interval"), ("compute", "service_down_time"),
          ("scheduler", "max_attempts"), ("scheduler", "claim_retries"),
          ("conductor", "stuck_move_after"), ("conductor", "stuck_build_after"),
          ("conductor", "recovery_interval"), ("conductor", "build_lease_seconds"),
          ("conductor", "schedule_batch_size"),
          ("upgrade_levels", "compute"), ("DEFAULT", "reclaim_instance_interval"),
          *SIGNING),
         {("DEFAULT", "transport_url"): BUS, ("api_database", "connection"): f"{DB}_api",
          ("placement_client", "endpoint"): "http://placement.example:8778",
          ("network_client", "endpoint"): "http://network.example:9696"}),
    Role("compute.conf", "a compute host of cell1 (its name and cell uuid are the flags "
         "--host and --cell-uuid). No database: its records go through its cell's "
         "conductor",
         "stratus compute --config-file /etc/stratus/compute.conf --host cmp-a "
         "--cell-uuid CELL1_UUID",
         (("DEFAULT", "debug"), ("DEFAULT", "transport_url"),
          *CLIENTS, *SERVICE_USER, *NETWORK_CLIENT, ("glance", "api_servers"),
          ("glance", "token"),
          ("compute", "report_interval"), ("compute", "resource_tracker_interval"),
          ("compute", "provider_refresh_interval"), ("upgrade_levels", "conductor"),
          *SIGNING),
         {("DEFAULT", "transport_url"):
          "amqp://stratus:RABBIT_PASSWORD@rabbit.example:5672/stratus-cell1",
          ("placement_client", "endpoint"): "http://placement.example:8778",
          ("network_client", "endpoint"): "http://network.example:9696"}),
)

ROLES += (
    Role("identity-api.conf", "the identity API (Keystone v3)",
         "stratus identity-api --config-file /etc/stratus/identity-api.conf --host 0.0.0.0",
         (("DEFAULT", "debug"), ("identity_database", "connection"), ("identity", "key_file"),
          ("identity", "credential_key_file"),
          ("identity", "token_expiration"), ("identity", "region"), ("metrics", "enabled"),
          *((o.section, o.name) for o in OPTIONS if o.section == "catalog")),
         {("identity_database", "connection"): f"{DB}_identity"}),
    Role("image-api.conf", "the image API (Glance v2)",
         "stratus image-api --config-file /etc/stratus/image-api.conf --host 0.0.0.0",
         (("DEFAULT", "debug"), ("image_database", "connection"), ("image", "store_dir"),
          ("image", "max_image_size"), ("image", "max_json_body_bytes"),
          ("api", "auth_strategy"), ("metrics", "enabled")),
         {("image_database", "connection"): f"{DB}_image"}),
)

# Options no role above reads: `stratus zone-manager` (design document 003),
# `stratus serve`'s data directory, and the cell database `stratus-manage cell_v2`
# maps by default (a compute reads no database since issue 29; one started with
# `--cell-db`, the previous release's way, takes its URL there).
NOT_IN_A_ROLE = {("DEFAULT", "data_dir"), ("database", "connection"),
                 *((o.section, o.name) for o in OPTIONS
                 if o.section == "zones")}

_BY_KEY = {(o.section, o.name): o for o in OPTIONS}


def _shown(option: Option, value: object) -> str:
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(role: Role) -> str:
    lines = [f"# {role.file}: {role.title}.",
             "# Generated by `python -m stratus.config_samples etc/stratus` from",
             "# stratus/config.py; a line starting with '#name =' shows the default.",
             f"#   {role.command}",
             "# Every option can also be set as an environment variable (shown).", ""]
    section = None
    order = list(dict.fromkeys(section for section, _ in role.options))
    for key in sorted(role.options, key=lambda k: order.index(k[0])):   # stable
        option = _BY_KEY[key]
        if option.section != section:
            if section is not None:
                lines.append("")
            section = option.section
            lines.append(f"[{section}]")
        lines.append("")
        lines += [f"# {t}" for t in textwrap.wrap(option.help, 78)]
        extra = f"one of {', '.join(option.choices)}; " if option.choices else ""
        lines.append(f"# ({extra}${option.env_var})")
        if key in role.values:
            lines.append(f"{option.name} = {role.values[key]}")
        else:
            lines.append(f"#{option.name} = {_shown(option, option.default)}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for role in ROLES:
        path = directory / role.file
        path.write_text(render(role), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stratus.config_samples",
        description="Write the sample configuration file of each role of a distributed "
                    "deployment, from the option list (stratus/config.py).")
    parser.add_argument("directory", nargs="?", default="etc/stratus", type=Path,
                        help="where to write them (default: etc/stratus)")
    args = parser.parse_args(argv)
    try:
        written = write_all(args.directory)
    except OSError as exc:
        parser.error(f"cannot write the samples in {args.directory}: "
                     f"{exc.strerror or exc}")
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
