"""Configuration: declared once, loaded once at the entry point, passed down.

Sources, later ones winning: built-in defaults, INI files (``placement.conf``
syntax, so an existing Placement configuration works unchanged), environment
variables named ``OS_<SECTION>__<OPTION>`` (oslo.config's convention, e.g.
``OS_PLACEMENT_DATABASE__CONNECTION``), then explicit overrides from the
command line. Nothing here is global: :func:`load` returns a :class:`Config`.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the option."""


@dataclass(frozen=True)
class Option:
    section: str
    name: str
    type: type
    default: Any
    help: str
    # Accepted values (for str options), and the smallest accepted number.
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    # Other spellings of a choice (an option that was a boolean before it had choices).
    aliases: tuple[tuple[str, str], ...] = ()

    @property
    def env_var(self) -> str:
        return f"OS_{self.section.upper()}__{self.name.upper()}"

    def parse(self, raw: str) -> Any:
        where = f"[{self.section}] {self.name}"
        if self.type is bool:
            value = raw.strip().lower()
            if value in TRUE:
                return True
            if value in FALSE:
                return False
            raise ConfigError(f"{where}: expected true or false, got {raw!r}")
        if self.type is int:
            try:
                number = int(raw)
            except ValueError:
                raise ConfigError(f"{where}: expected an integer, got {raw!r}") from None
            if self.minimum is not None and number < self.minimum:
                raise ConfigError(f"{where}: must be at least {self.minimum}, got {number}")
            return number
        if self.type is float:
            try:
                return float(raw)
            except ValueError:
                raise ConfigError(f"{where}: expected a number, got {raw!r}") from None
        if self.type is list:
            return [item.strip() for item in raw.split(",") if item.strip()]
        raw = dict(self.aliases).get(raw.strip().lower(), raw)
        if self.choices is not None and raw.strip() not in self.choices:
            raise ConfigError(
                f"{where}: expected one of {', '.join(self.choices)}, got {raw!r}"
            )
        return raw.strip() if self.choices is not None else raw


OPTIONS: list[Option] = [
    Option("DEFAULT", "data_dir", str, "", "Directory for SQLite files and state "
           "(default: ./data, or $STRATUS_DATA_DIR)."),
    Option("DEFAULT", "debug", bool, False, "Log at debug level."),
    Option("DEFAULT", "host", str, "", "This machine's name in the service records the "
           "scheduler and the conductor heartbeat (stratus service list); default: the "
           "hostname. Computes are named by their --host."),
    Option("placement_database", "connection", str, "", "Placement database URL "
           "(sqlite:///path, postgresql://..., mysql+pymysql://...); default: "
           "a SQLite file in data_dir."),
    Option("placement_database", "sync_on_startup", bool, True,
           "Run database migrations when the API starts."),
    Option("api", "auth_strategy", str, "noauth2", "noauth2 (tokens are 'user[:project]'; "
           "'admin' is admin) or keystone (keystonemiddleware validates tokens).",
           choices=("noauth2", "keystone")),
    Option("placement", "randomize_allocation_candidates", bool, False,
           "Shuffle allocation candidates instead of returning them in a stable order."),
    Option("placement", "max_allocation_candidates", int, -1,
           "Upper bound on candidates generated per request; -1 means no bound "
           "(Stratus bounds its work by 'limit' anyway).", minimum=-1),
    Option("placement", "allocation_candidates_generation_strategy", str, "depth-first",
           "Accepted for placement.conf compatibility (depth-first or breadth-first).",
           choices=("depth-first", "breadth-first")),
    Option("placement", "allocation_conflict_retry_count", int, 10,
           "Times an allocation write is retried, server-side, when a provider's "
           "generation moved under it (a concurrent writer); then 409. PostgreSQL "
           "only: on SQLite and MariaDB/MySQL a claim locks its providers before "
           "reading them, so a concurrent writer makes it wait, not retry."),
    Option("placement", "incomplete_consumer_project_id", str,
           "00000000-0000-0000-0000-000000000000",
           "Project recorded for consumers created before 1.8 without a project."),
    Option("placement", "incomplete_consumer_user_id", str,
           "00000000-0000-0000-0000-000000000000",
           "User recorded for consumers created before 1.8 without a user."),
    Option("oslo_policy", "policy_file", str, "policy.yaml",
           "Policy overrides in oslo.policy syntax (YAML or JSON); ignored if missing."),
    Option("oslo_policy", "enforce_scope", bool, True,
           "Reject tokens whose scope does not match a rule's scope_types."),
    Option("oslo_policy", "enforce_new_defaults", bool, True,
           "Use the new default rules; false restores the legacy admin-only rules."),
    Option("cors", "allowed_origin", list, [], "Origins allowed to make CORS requests."),
    Option("cors", "allow_credentials", bool, True, "Allow CORS requests with credentials."),
    Option("cors", "expose_headers", list, [], "Headers exposed to CORS clients."),
    Option("cors", "max_age", int, 3600, "Seconds a CORS preflight may be cached.",
           minimum=0),
    Option("cors", "allow_methods", list, ["GET", "PUT", "POST", "DELETE", "PATCH"],
           "Methods allowed in CORS requests."),
    Option("cors", "allow_headers", list, [], "Extra request headers allowed in CORS requests."),
    Option("api", "max_servers_per_request", int, 100,
           "The most servers one compute API boot may ask for (max_count); more is 403.",
           minimum=1),
    Option("api", "max_limit", int, 1000,
           "The most items one page of a compute API list (GET /servers) holds, and the "
           "page size when the request gives no limit (Nova's default).", minimum=1),
    *(Option("quota", name, int, default, f"{text} per project (Nova's default "
             f"{default}); -1 is unlimited. The quota class 'default' and a project's own "
             "quota (os-quota-class-sets, os-quota-sets) override it.", minimum=-1)
      for name, default, text in (
          ("instances", 10, "Servers"), ("cores", 20, "VCPUs of servers"),
          ("ram", 51200, "MiB of RAM of servers"),
          ("server_groups", 10, "Server groups"),
          ("server_group_members", 10, "Servers in one server group"),
          ("key_pairs", 100, "Key pairs of each user"),
          ("metadata_items", 128, "Metadata items of one server"),
          ("injected_files", 5, "Injected files (shown before 2.57, not enforced)"),
          ("injected_file_content_bytes", 10240,
           "Bytes of an injected file (shown before 2.57, not enforced)"),
          ("injected_file_path_bytes", 255,
           "Bytes of an injected file's path (shown before 2.57, not enforced)"))),
    Option("quota", "recheck_quota", bool, True,
           "Count again after a boot's records are written and undo the boot if a "
           "concurrent one took the room meanwhile (Nova's option of that name)."),
    Option("api_server", "max_body_bytes", int, 1_048_576,
           "Largest request body accepted; larger bodies get 413.", minimum=1),
    Option("DEFAULT", "transport_url", str, "", "Message bus URL: inproc://NAME (one "
           "process) or amqp://USER:PASS@HOST:PORT/VHOST (RabbitMQ); see docs/bus.md."),
    Option("compute", "report_interval", int, 10,
           "Seconds between heartbeats of a service (computes, schedulers, "
           "conductors).", minimum=1),
    Option("compute", "service_down_time", int, 60,
           "Seconds without a heartbeat after which a service counts as down.", minimum=1),
    Option("compute", "resource_tracker_interval", int, 60,
           "Seconds between a compute's resource tracker passes (provider tree, "
           "inventories, traits and aggregates synced to Placement).", minimum=1),
    Option("compute", "provider_refresh_interval", int, 300,
           "Seconds a pass trusts a provider whose description has not changed since "
           "Placement last agreed with it, without reading Placement (Nova's "
           "resource_provider_association_refresh). A changed description is synced at "
           "the next pass; a change made in Placement by hand is repaired within this "
           "time. 0: read Placement every pass.", minimum=0),
    Option("DEFAULT", "rpc_response_timeout", int, 60,
           "Seconds a caller waits for the answer to an RPC call (e.g. the compute API "
           "waiting for a compute's set_host_enabled).", minimum=1),
    Option("DEFAULT", "long_rpc_timeout", int, 1800,
           "Seconds a conductor waits for the scheduler's answer to select_destinations "
           "(Nova's option of the same name): a call waits its turn in the scheduler's "
           "queue, and a cloud filling fast can queue more than rpc_response_timeout of "
           "them; a scheduler that dies holding one hands it to the next. With no "
           "scheduler running at all, a boot stays in BUILD this long before ERROR "
           "(Nova's call monitor fails it sooner; Stratus has none yet).", minimum=1),
    Option("DEFAULT", "default_availability_zone", str, "nova",
           "Availability zone of compute hosts that are in no zone aggregate."),
    Option("DEFAULT", "internal_service_availability_zone", str, "internal",
           "Availability zone shown for services other than computes."),
    Option("DEFAULT", "allow_resize_to_same_host", bool, False,
           "Let a resize pick the server's current host (Nova's option of that name); "
           "otherwise the scheduler ignores it. Turn on for one-host clouds."),
    Option("DEFAULT", "shelved_offload_time", int, 0,
           "Seconds a shelved server stays on its host before it is offloaded (Nova's "
           "option): 0 offloads at once, -1 never (shelveOffload does it); Stratus "
           "offloads either at once or on request.", minimum=-1),
    Option("DEFAULT", "reclaim_instance_interval", int, 0,
           "Seconds a deleted server is kept (SOFT_DELETED, powered off, holding what "
           "it held; restore brings it back, forceDelete ends it) before the conductor "
           "reclaims it (Nova's option); 0 deletes at once."),
    Option("api", "enable_instance_password", bool, True,
           "Answer a boot, rebuild or rescue with the server's admin password "
           "(adminPass), generated when the request gives none (Nova's option)."),
    Option("DEFAULT", "password_length", int, 12,
           "Length of generated admin passwords (Nova's option).", minimum=1),
    Option("upgrade_levels", "compute", str, "",
           "Pin the ComputeRPC version the API and the conductor send (e.g. 1.3) during a "
           "rolling upgrade, or 'auto' for the oldest compute's; empty: the newest. A "
           "pinned 1.3 cannot move servers whose ports have resource requests (the move "
           "fails cleanly on the compute, design document 004)."),
    Option("bus", "signing", str, "required",
           "Sign every message a service sends on its deployment's bus with its own "
           "Ed25519 key. 'required': refuse unsigned, unknown, tampered, replayed and "
           "expired ones (the zones' mechanism; docs/bus.md). 'transition', during a "
           "rolling upgrade from a release without signing: sign everything, and accept "
           "unsigned messages only from computes of that release (a compute whose service "
           "record is below ComputeRPC 1.7) and the senders of [bus] unsigned_senders, each "
           "logged at WARNING once per sender; every other message as 'required'. 'off': "
           "sign and check nothing (true and false mean required and off). For services "
           "run as separate processes; `stratus serve` runs everything in one process and "
           "signs nothing.", choices=("required", "transition", "off"),
           aliases=tuple((word, "required") for word in sorted(TRUE))
           + tuple((word, "off") for word in sorted(FALSE - {"off"}))),
    Option("bus", "unsigned_senders", list, [],
           "With [bus] signing = transition: bus identities (e.g. compute:cmp-7, or "
           "compute:NAME for a `stratus compute --count` process of the previous release) "
           "whose unsigned messages are accepted besides those of old computes found by "
           "their service records."),
    Option("bus", "key_dir", str, "",
           "Where each service's private bus key is (<identity>.key, e.g. "
           "compute_cmp-a.key; made on first start if missing, or by `stratus-manage bus "
           "keygen`); default: bus/ in data_dir."),
    Option("bus", "trust_store", str, "",
           "The public keys of every service of the deployment (JSON; re-read when it "
           "changes, so a key rotation needs no restart); default: trust.json in key_dir."),
    Option("bus", "message_window", float, 600.0,
           "Seconds a signed message stays acceptable (clocks must agree within it); "
           "older or future ones are refused, and ids seen within it are replays. Also "
           "how long a request may wait in its queue for a receiver that is down: one "
           "that waited longer is refused, and the conductors' recovery passes redo the "
           "builds and moves it was part of.", minimum=1),
    Option("upgrade_levels", "conductor", str, "",
           "Pin the ConductorRPC version a compute sends (e.g. 1.3) while conductors of "
           "the previous version still run; empty: the newest. Below 1.4 the conductors "
           "cannot keep a compute's records, so such a compute needs --cell-db (its "
           "database, the old way) until every conductor is upgraded."),
    Option("conductor", "stuck_move_after", int, 600,
           "Seconds after which `stratus conductor` (when it starts, and at each recovery "
           "pass) takes over a server move that no conductor finished (one crashed "
           "mid-move) and drives it to an end: rolled back before it finished, confirm or "
           "revert done again after. Longer than your slowest move.",
           minimum=0),
    Option("conductor", "stuck_build_after", int, 120,
           "Seconds after which a conductor takes over a server build that nobody has "
           "driven since (its conductor or compute stopped during it): built again, sent "
           "to its compute again, or put in ERROR with a fault saying why. Longer than "
           "your slowest spawn.", minimum=1),
    Option("conductor", "build_lease_seconds", int, 10,
           "Seconds a conductor's hold on a build it is driving lasts unless renewed (it "
           "renews every third of this while it builds). A build cast the bus delivers "
           "again, because the conductor holding it died, is taken over once that "
           "conductor's hold is this old.", minimum=2),
    Option("conductor", "schedule_batch_size", int, 100,
           "Servers of one multi-create (max_count) asked of the scheduler per call: a "
           "boot of 1,000 is ten calls of 100, each well inside long_rpc_timeout and "
           "taking its turn with other boots' calls, instead of one that may outlast it "
           "and hold the scheduler meanwhile. The boot stays all or nothing: if one "
           "call finds no host, the claims of the calls before it are released. A "
           "server group's boot is asked in one call (its policy spans the batch).",
           minimum=1),
    Option("conductor", "recovery_interval", int, 60,
           "Seconds between a conductor's passes over stuck builds and moves (also one at "
           "start); 0: only at start.", minimum=0),
    Option("network_database", "connection", str, "", "Network database URL (networks, "
           "ports, QoS policies, bindings); default: network.db in data_dir."),
    Option("network_database", "sync_on_startup", bool, True,
           "Run the network database's migrations when the network API starts."),
    Option("network", "legacy_resource_request", bool, False,
           "Answer ports' resource_request in Neutron's old single-group format (no "
           "port-resource-request-groups extension, bandwidth only), as a Neutron before "
           "Xena does."),
    Option("network", "binding_extended", bool, True,
           "Offer the multiple port bindings API (Neutron's binding-extended extension: "
           "/v2.0/ports/{id}/bindings), which live migration uses. false stands in for a "
           "Neutron before Rocky: servers whose ports have resource requests cannot be "
           "live-migrated, others are, with their ports rebound at the end."),
    Option("network_client", "endpoint", str, "http://127.0.0.1:9696",
           "Where the compute plane (API, conductor, computes) reaches the network API."),
    Option("network_client", "token", str, "admin",
           "Token the compute plane sends to the network API (noauth2: 'admin' is admin)."),
    Option("network_client", "retry_seconds", float, 30.0,
           "Seconds a service keeps sending a request to the network API again after a "
           "connection failure or timeout (jittered backoff), when that is safe: reads, "
           "updates and deletes; a port create only if it never reached the service. 0: "
           "no retries. Cover a restart of the network API."),
    Option("database", "connection", str, "", "A cell's database URL: the one "
           "`stratus-manage cell_v2 create_cell` (or "
           "map_cell0) maps when given no --database_connection. Keep it in a configuration "
           "file or the environment ($OS_DATABASE__CONNECTION), not on a command line, "
           "where `ps` shows its password."),
    Option("api_database", "connection", str, "", "API database URL (cell mappings, "
           "flavors, aggregates, request specs); default: api.db in data_dir."),
    Option("placement_client", "endpoint", str, "http://127.0.0.1:8778",
           "Where services (scheduler, conductor, compute) reach the Placement API."),
    Option("placement_client", "token", str, "admin",
           "Token services send to Placement (noauth2: 'admin' is an admin)."),
    Option("placement_client", "auth_url", str, "",
           "Identity (Keystone v3) URL: when set, the service authenticates as its own "
           "user (username, password, project_name) and sends that user's token instead "
           "of `token`, renewing it before it expires. A compute host's user is named "
           "after the host and holds Placement's `compute` role (docs/ops/security.md)."),
    Option("placement_client", "username", str, "",
           "Keystone user the service authenticates as (with auth_url)."),
    Option("placement_client", "password", str, "",
           "That user's password: keep it in a 0600 file or $OS_PLACEMENT_CLIENT__PASSWORD."),
    Option("placement_client", "project_name", str, "service",
           "Project the service's token is scoped to (with auth_url)."),
    Option("placement_client", "user_domain_name", str, "Default",
           "Domain of the service's user (with auth_url)."),
    Option("placement_client", "project_domain_name", str, "Default",
           "Domain of the service's project (with auth_url)."),
    Option("placement_client", "retry_seconds", float, 30.0,
           "Seconds a service keeps sending a request to Placement again after a "
           "connection failure or timeout (jittered backoff), when that is safe: reads, "
           "deletes and writes guarded by a generation (a claim); others only if they never "
           "reached Placement. 0: no retries. Cover a restart of placement-api."),
    Option("scheduler", "max_placement_results", int, 1000,
           "Allocation candidates asked of Placement per request (its 'limit').", minimum=1),
    Option("scheduler", "max_attempts", int, 3,
           "Hosts tried per server: the chosen one plus max_attempts - 1 alternates "
           "for reschedules after a failed spawn.", minimum=1),
    Option("scheduler", "enabled_filters", list,
           ["compute", "compute_version", "hosts_requested", "availability_zone",
            "server_group_affinity", "server_group_anti_affinity", "image_properties"],
           "Host filters, in order (stratus/scheduler/filters.py names)."),
    Option("scheduler", "request_filters", list,
           ["disabled_cells", "availability_zone", "tenant_isolation"],
           "Request filters, in order; compute_status (disabled computes) always runs."),
    Option("scheduler", "weights", list, ["ram:1.0", "cpu:1.0", "disk:1.0", "affinity:1.0"],
           "Weigher multipliers as name:multiplier (negative packs, positive spreads): "
           "ram, cpu, disk, num_instances (servers on the host), affinity (soft "
           "server-group policies), project_spread (hosts without the project's servers "
           "first). A zone tree ranks with the same weighers at every level."),
    Option("scheduler", "columnar", bool, True,
           "Decide in columns (candidates as a table, filters and weighers over every "
           "host at once; same answers as per host, several times faster at 1000 "
           "candidates). false: a host state per candidate, filtered and weighed one by "
           "one (the reference path; also used whenever a filter or weigher lacks a column "
           "form)."),
    Option("scheduler", "cell_cache_refresh_interval", int, 60,
           "Seconds after which the cached cell list is reloaded even without SIGHUP "
           "(0: only on SIGHUP).", minimum=0),
    Option("scheduler", "claim_retries", int, 3,
           "Retries of a claim that lost a generation race before trying the next host.",
           minimum=0),
    Option("scheduler", "cell_timeout", int, 10,
           "Seconds to wait for a cell database; a cell that does not answer is skipped.",
           minimum=1),
    Option("scheduler", "host_state_max_age", float, 1.0,
           "Seconds the scheduler keeps a cell's compute_nodes/services rows before reading "
           "the disabled and forced-down services again, behind the request that finds "
           "them older (a copy older than twice this is refreshed before deciding; a host "
           "it has not seen is read at once; 0: read every request). Disabled and "
           "forced-down flags can lag by up to twice this."),
    Option("scheduler", "host_state_whole_age", float, 10.0,
           "Seconds after which a cell's rows are read whole again (heartbeats, service "
           "versions, compute node figures), at the refresh that finds them older. "
           "Heartbeats can lag by up to twice this, so keep it well under "
           "service_down_time: a host that comes back after being down counts as up once "
           "its cell is read whole.", minimum=0),
    # Identity (Keystone v3 compatible) and the service catalog its tokens carry.
    Option("identity_database", "connection", str, "", "Identity database URL (users, "
           "projects, roles); default: identity.db in data_dir."),
    Option("identity", "key_file", str, "", "Fernet keys for tokens, one per line, the "
           "first one signing (default: identity-fernet.keys in data_dir; made if missing "
           "by `stratus serve` and `stratus-manage identity bootstrap`)."),
    Option("identity", "credential_key_file", str, "", "Fernet keys encrypting stored "
           "credentials (EC2 and others), one per line, the first one encrypting (default: "
           "identity-credential.keys in data_dir; made if missing). Not rotated with the "
           "token keys: a credential must stay readable while it exists."),
    Option("identity", "token_expiration", int, 3600, "Seconds a token is valid.",
           minimum=60),
    Option("identity", "region", str, "RegionOne", "The catalog's one region."),
    Option("image_database", "connection", str, "", "Image database URL; default: "
           "image.db in data_dir."),
    Option("image", "store_dir", str, "", "Where image data is kept, a file per image "
           "(default: images/ in data_dir)."),
    Option("image", "max_image_size", int, 268_435_456, "Largest image upload in bytes "
           "(uploads are streamed to disk, never held in memory).", minimum=0),
    Option("image", "max_json_body_bytes", int, 1_048_576, "Largest JSON request body "
           "the image API reads (creates, patches, members, metadefs); larger ones get "
           "413.", minimum=1),
    Option("glance", "api_servers", list, [], "The image API(s) the compute API looks "
           "boots' imageRef up in and a compute uploads snapshots to (the first is used; "
           "empty: imageRef is not checked and createImage fails on the compute)."),
    Option("glance", "token", str, "admin", "Token the compute API and the computes send "
           "to the image API (noauth2: 'admin' is admin)."),
    Option("catalog", "identity", str, "", "The identity endpoint in the catalog "
           "(e.g. http://127.0.0.1:5000/v3)."),
    Option("catalog", "compute", str, "", "The compute endpoint in the catalog "
           "(e.g. http://127.0.0.1:8774/v2.1)."),
    Option("catalog", "placement", str, "", "The placement endpoint in the catalog."),
    Option("catalog", "network", str, "", "The network endpoint in the catalog."),
    Option("catalog", "image", str, "", "The image endpoint in the catalog."),
    Option("metrics", "enabled", bool, True,
           "Serve Prometheus metrics at /metrics on each API and count its requests "
           "(unauthenticated, like /healthcheck: keep the port off public networks or "
           "block the path at the proxy; false: /metrics is an unknown path, 404)."),
    # Zones (design document 003): not availability zones, a tree of deployments.
    Option("zones", "name", str, "", "This zone's name in the zone tree (its zone "
           "manager's server name on the zones' bus)."),
    Option("zones", "parent", str, "", "The parent zone's name (empty: this is the top)."),
    Option("zones", "transport_url", str, "", "The bus zones talk over (amqp://...; "
           "inproc://NAME in one process), apart from each zone's own bus."),
    Option("zones", "database", str, "", "This zone manager's local store (default: "
           "zone-NAME.db in data_dir)."),
    Option("zones", "results", int, 10, "N: the best hosts each zone passes up.",
           minimum=1),
    Option("zones", "weights", list, [],
           "Gone: a zone tree ranks with the flat scheduler's weighers, [scheduler] "
           "weights, declared once for a zone's own scheduler and the tree (every zone "
           "posts them; a parent refuses a child that weighs otherwise). Setting this is "
           "an error that says so."),
    Option("zones", "select_timeout", float, 5.0,
           "Seconds the origin waits for a select; each level gives its children 80% of "
           "its own budget, and a child that is late is left out of that answer."),
    Option("zones", "capabilities_interval", float, 10.0,
           "Seconds between a zone's capability posts to its parent."),
    Option("zones", "capabilities_ttl", float, 30.0,
           "Seconds after its last post that a child is left out of selects."),
    Option("zones", "build_timeout", float, 120.0,
           "Seconds the origin waits for a server to become ACTIVE on a chosen host before "
           "trying the next."),
    Option("zones", "key_file", str, "", "This service's Ed25519 private key (PEM; "
           "default: zones/keys/ZONE-SERVICE.pem in data_dir)."),
    Option("zones", "trust_store", str, "", "JSON file of the public keys every zone "
           "service is checked against (default: zones/trust.json in data_dir); reloaded "
           "when it changes."),
    Option("zones", "message_window", float, 60.0,
           "Seconds a signed message between zones stays acceptable (clock skew included); "
           "older ones are refused as expired, and ids are remembered this long against "
           "replays.", minimum=1),
]

_BY_KEY: dict[tuple[str, str], Option] = {(o.section, o.name): o for o in OPTIONS}


@dataclass(frozen=True)
class Config:
    """Loaded configuration. ``get(section, name)`` for declared options;
    ``section(name)`` for the raw key/values of any section (e.g. keystone_authtoken)."""

    values: Mapping[tuple[str, str], Any]
    raw_sections: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The INI files read, absolute, in order: relative paths in them (the
    # policy file) are looked up beside them, as oslo.config does.
    files: tuple[str, ...] = ()
    # The options a file, the environment or a flag set (the rest are defaults).
    given: frozenset[tuple[str, str]] = frozenset()

    def get(self, section: str, name: str) -> Any:
        return self.values[(section, name)]

    def is_set(self, section: str, name: str) -> bool:
        """Whether the option was set (by a file, the environment or a flag), not left
        at its default."""
        return (section, name) in self.given

    def section(self, name: str) -> Mapping[str, str]:
        return self.raw_sections.get(name, {})

    @property
    def data_dir(self) -> str:
        return str(self.get("DEFAULT", "data_dir"))

    @property
    def placement_db_url(self) -> str:
        url = str(self.get("placement_database", "connection"))
        return url or f"sqlite:///{os.path.join(self.data_dir, 'placement.db')}"

    def with_overrides(self, overrides: Mapping[tuple[str, str], Any]) -> Config:
        values = dict(self.values)
        given = set(self.given)
        for key, value in overrides.items():
            if key not in _BY_KEY:
                raise ConfigError(f"unknown option [{key[0]}] {key[1]}")
            if value is not None:
                values[key] = value
                given.add(key)
        return Config(values, self.raw_sections, self.files, frozenset(given))


def load(
    files: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[tuple[str, str], Any] | None = None,
) -> Config:
    environ = os.environ if environ is None else environ
    files = list(files)
    values: dict[tuple[str, str], Any] = {key: opt.default for key, opt in _BY_KEY.items()}
    values[("DEFAULT", "data_dir")] = environ.get("STRATUS_DATA_DIR", "") or os.path.abspath(
        "data"
    )
    raw: dict[str, dict[str, str]] = {}
    given: set[tuple[str, str]] = set()
    for path in files:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            with open(path, encoding="utf-8") as fh:
                parser.read_file(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        except configparser.Error as exc:
            detail = " ".join(str(exc).split())  # configparser's messages span lines
            raise ConfigError(f"config file {path} is not valid INI: {detail}") from None
        sections = [("DEFAULT", parser.defaults())] + [
            (name, {k: v for k, v in parser.items(name, raw=True) if k not in parser.defaults()})
            for name in parser.sections()
        ]
        for section, items in sections:
            raw.setdefault(section, {}).update(items)
            for name, value in items.items():
                opt = _BY_KEY.get((section, name))
                if opt is not None:
                    values[(section, name)] = _parse(opt, value, path)
                    given.add((section, name))
    for opt in OPTIONS:
        if opt.env_var in environ:
            values[(opt.section, opt.name)] = _parse(opt, environ[opt.env_var], f"${opt.env_var}")
            given.add((opt.section, opt.name))
    config = Config(values, raw, tuple(os.path.abspath(path) for path in files),
                    frozenset(given))
    return config.with_overrides(overrides or {})


def _parse(opt: Option, raw: str, source: str) -> Any:
    try:
        return opt.parse(raw)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (from {source})") from None


def describe_options() -> str:
    """Every option, for ``--help``: section, name, environment variable, default, meaning."""
    lines = ["configuration options (INI file section/name, or environment variable):"]
    for opt in OPTIONS:
        default = ",".join(opt.default) if isinstance(opt.default, list) else opt.default
        lines.append(f"  [{opt.section}] {opt.name}  (${opt.env_var}, default: {default!r})")
        lines.append(f"      {opt.help}")
        if opt.choices:
            lines.append(f"      One of: {', '.join(opt.choices)}.")
    return "\n".join(lines)
