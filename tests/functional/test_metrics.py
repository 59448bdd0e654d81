"""Metrics and health through HTTP: ``/metrics`` and ``/healthcheck`` on each API of
``stratus serve`` (in this process: one registry behind all three), the scheduler's and
the builds' metrics after real boots, a resize's duration, ``--metrics-port`` on a
service process, and the Placement API with ``[metrics] enabled = false``.

The exposition is parsed with prometheus_client's own parser. The registry is this
process's, shared with any test that ran before, so every count is compared with what
it was before the test's own requests.
"""

from __future__ import annotations

import re
import signal
import time
import uuid as uuidlib
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from stratus import config as configuration
from stratus.allinone.cloud import AllInOne
from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db
from tests.functional import cli_helpers
from tests.functional.serve_helpers import running_serve
from tests.functional.test_scheduler_process import start, wait_for_text

ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "compute 2.88"}
PLACEMENT = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample at ``url``/metrics, keyed by (name, labels)."""
    resp = httpx.get(url + "/metrics", timeout=30)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(resp.text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AllInOne]:
    # No quotas: a flavor too big for every host must reach the scheduler.
    with running_serve(tmp_path_factory.mktemp("metrics-serve"), hosts=2, prefix="metrics",
                       overrides={("quota", "cores"): -1, ("quota", "ram"): -1,
                                  ("quota", "instances"): -1}) as served:
        yield served


def root(cloud: AllInOne) -> str:
    return cloud.api_url.removesuffix("/v2.1")


def roots(cloud: AllInOne) -> dict[str, str]:
    return {"compute": root(cloud), "placement": cloud.placement_url.rstrip("/"),
            "network": cloud.network_url.rstrip("/"),
            "identity": cloud.identity_url.removesuffix("/v3"),
            "image": cloud.image_url.rstrip("/")}


def boot(cloud: AllInOne, name: str, flavor: str = "1") -> dict:
    resp = httpx.post(cloud.api_url + "/servers", headers=ADMIN, timeout=30, json={
        "server": {"name": name, "flavorRef": flavor}})
    assert resp.status_code == 202, resp.text
    return settle(cloud, resp.json()["server"]["id"], ("ACTIVE", "ERROR"))


def settle(cloud: AllInOne, uuid: str, statuses: tuple[str, ...]) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        server = httpx.get(f"{cloud.api_url}/servers/{uuid}", headers=ADMIN,
                           timeout=30).json()["server"]
        if server["status"] in statuses:
            return dict(server)
        time.sleep(0.05)
    raise AssertionError(f"server {uuid} never reached {statuses}")


def test_healthcheck_on_each_api_answers_load_balancers_without_a_token(cloud):
    for api, url in roots(cloud).items():
        got = httpx.get(url + "/healthcheck", timeout=10)
        assert (got.status_code, got.text) == (200, "OK"), api
        assert got.headers["content-type"].startswith("text/plain")
        head = httpx.head(url + "/healthcheck", timeout=10)
        assert (head.status_code, head.content) == (204, b""), api
        assert httpx.post(url + "/healthcheck", timeout=10).status_code == 405, api
    # Not counted: a load balancer's probes are not the API's traffic.
    assert not any(dict(labels).get("route") == "/healthcheck"
                   for _, labels in scrape(root(cloud)))


def test_serve_counts_requests_decisions_claims_and_builds(cloud):
    before = scrape(root(cloud))
    server = boot(cloud, "metered")
    assert server["status"] == "ACTIVE"
    flavor = httpx.post(cloud.api_url + "/flavors", headers=ADMIN, timeout=30, json={
        "flavor": {"name": "too-big", "vcpus": 4096, "ram": 512, "disk": 1}})
    assert flavor.status_code == 200, flavor.text
    failed = boot(cloud, "too-big", flavor.json()["flavor"]["id"])
    assert failed["status"] == "ERROR"
    missing = httpx.get(f"{cloud.api_url}/servers/{uuidlib.uuid4()}", headers=ADMIN)
    assert missing.status_code == 404
    # Serve's own services ask the Placement app for candidates and claims in-process (no
    # HTTP request to count: their claims show in the scheduler's metrics below); a
    # client of serve's Placement API is counted by route.
    host = server["OS-EXT-SRV-ATTR:hypervisor_hostname"]
    providers = httpx.get(f"{cloud.placement_url.rstrip('/')}/resource_providers",
                          params={"name": host}, headers=PLACEMENT, timeout=30)
    [provider] = providers.json()["resource_providers"]
    usages = httpx.get(f"{cloud.placement_url.rstrip('/')}/resource_providers/"
                       f"{provider['uuid']}/usages", headers=PLACEMENT, timeout=30)
    assert usages.json()["usages"]["VCPU"] >= 1
    after = scrape(root(cloud))

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # Requests by API, route template and status; the path's ids are not labels.
    assert grew("stratus_http_requests_total", api="compute", method="POST",
                route="/servers", status="202") == 2
    assert grew("stratus_http_requests_total", api="compute", method="GET",
                route="/servers/{server_id}", status="404") == 1
    assert grew("stratus_http_request_duration_seconds_count", api="compute",
                method="POST", route="/servers") == 2
    assert grew("stratus_http_requests_total", api="placement", method="GET",
                route="/resource_providers/{uuid}/usages", status="200") == 1
    routes = {dict(labels).get("route", "") for _, labels in after}
    assert not [r for r in routes if UUID.search(r)]
    # One decision each way, the failure by its reason's category.
    assert grew("stratus_scheduler_decisions_total", outcome="scheduled") == 1
    assert grew("stratus_scheduler_decisions_total", outcome="no_valid_host") == 1
    assert grew("stratus_scheduler_no_valid_host_total", reason="capacity") == 1
    assert grew("stratus_scheduler_decision_duration_seconds_count", outcome="scheduled") == 1
    assert grew("stratus_scheduler_allocation_candidates_duration_seconds_count") >= 2
    assert grew("stratus_scheduler_claim_duration_seconds_count", outcome="claimed") == 1
    # From the API's accept to ACTIVE (on the compute) and to ERROR (in the conductor).
    assert grew("stratus_build_duration_seconds_count", outcome="active") == 1
    assert grew("stratus_build_duration_seconds_count", outcome="error") == 1
    assert grew("stratus_build_duration_seconds_sum", outcome="active") > 0


def test_every_api_of_serve_shows_the_one_registry(cloud):
    boot(cloud, "seen-everywhere")
    by_api = {api: scrape(url) for api, url in roots(cloud).items()}
    for api, samples in by_api.items():
        assert total(samples, "stratus_scheduler_decisions_total") >= 1, api
        assert {dict(labels).get("api") for _, labels in samples} >= \
            {"compute", "placement", "network"}, api


def test_a_resize_is_timed_by_kind(cloud):
    server = boot(cloud, "resized")
    before = scrape(root(cloud))
    resp = httpx.post(f"{cloud.api_url}/servers/{server['id']}/action", headers=ADMIN,
                      timeout=30, json={"resize": {"flavorRef": "2"}})
    assert resp.status_code == 202, resp.text
    settle(cloud, server["id"], ("VERIFY_RESIZE", "ERROR"))
    after = scrape(root(cloud))
    grew = (value(after, "stratus_move_duration_seconds_count", kind="resize", outcome="done")
            - value(before, "stratus_move_duration_seconds_count", kind="resize",
                    outcome="done"))
    assert grew == 1
    # Confirming is a step of its own, not a second end of the move.
    resp = httpx.post(f"{cloud.api_url}/servers/{server['id']}/action", headers=ADMIN,
                      timeout=30, json={"confirmResize": None})
    assert resp.status_code == 204, resp.text
    settle(cloud, server["id"], ("ACTIVE",))
    assert value(scrape(root(cloud)), "stratus_move_duration_seconds_count", kind="resize",
                 outcome="done") == value(after, "stratus_move_duration_seconds_count",
                                          kind="resize", outcome="done")


def placement_app(tmp_path, url: str, **overrides: object) -> httpx.Client:
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path), **{tuple(k.split(".")): v
                                                   for k, v in overrides.items()}})
    app = PlacementApp(config, db.create_engine(url))
    return httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(app)),
                        base_url="http://placement")


def test_healthcheck_is_503_when_the_database_is_unreachable(tmp_path):
    port = cli_helpers.free_port()   # nothing listens there
    with placement_app(tmp_path, f"postgresql://nobody@127.0.0.1:{port}/none") as http:
        got = http.get("/healthcheck")
        assert got.status_code == 503
        assert got.text.startswith("database unreachable")
        assert http.head("/healthcheck").status_code == 503


def test_metrics_can_be_turned_off(tmp_path):
    with placement_app(tmp_path, f"sqlite:///{tmp_path}/p.db",
                       **{"metrics.enabled": False}) as http:
        # The path is the API's own then: authenticated, and not found.
        assert http.get("/metrics").status_code == 401
        assert http.get("/metrics", headers={"X-Auth-Token": "admin"}).status_code == 404
        assert http.get("/healthcheck").status_code == 200


def test_a_service_process_serves_metrics_on_its_own_port(tmp_path):
    port = cli_helpers.free_port()
    proc, log = start(tmp_path, "conductor", "--transport-url", "inproc://metrics-cond",
                      "--api-db", f"sqlite:///{tmp_path}/api.db", "--sync-db",
                      "--data-dir", str(tmp_path), "--name", "cond-m",
                      "--metrics-port", str(port))
    try:
        wait_for_text(log, f"conductor cond-m: metrics at http://127.0.0.1:{port}/metrics",
                      proc)
        wait_for_text(log, "conductor cond-m: ConductorRPC", proc)
        samples = scrape(f"http://127.0.0.1:{port}")
        # Declared from the start, so a dashboard sees zeros rather than no series.
        assert ("stratus_scheduler_claim_conflicts_total", frozenset()) in samples
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_placement_workers_add_up_their_metrics(tmp_path):
    """``placement-api --workers 2``: whichever worker a scrape reaches, it reports every
    worker's requests (each connection may land on either)."""
    with cli_helpers.server(tmp_path, "--db", f"sqlite:///{tmp_path}/p.db",
                            "--workers", "2") as srv:
        for _ in range(12):   # new connections each: the kernel spreads them
            assert httpx.get(srv.url + "/resource_providers", headers={"X-Auth-Token": "admin"},
                             timeout=10).status_code == 200
        for _ in range(4):
            samples = scrape(srv.url)
            assert value(samples, "stratus_http_requests_total", api="placement",
                         method="GET", route="/resource_providers", status="200") == 12
        assert httpx.get(srv.url + "/healthcheck", timeout=10).text == "OK"


def test_identity_and_image_apis_have_health_and_metrics_too(tmp_path):
    from stratus.identity import service as identity
    from stratus.image import service as image

    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(tmp_path)})
    apps = {"identity": identity.make_app(identity.make_deps(
                config, db.create_engine(f"sqlite:///{tmp_path}/identity.db"))),
            "image": image.make_app(config, image.make_deps(
                config, db.create_engine(f"sqlite:///{tmp_path}/image.db")))}
    for api, app in apps.items():
        with httpx.Client(transport=httpx.WSGITransport(app=app),
                          base_url="http://api") as http:
            got = http.get("/healthcheck")
            assert (got.status_code, got.text) == (200, "OK"), api
            assert http.get("/").status_code in (200, 300)
            samples = {(s.name, frozenset(s.labels.items())): s.value
                       for family in text_string_to_metric_families(http.get("/metrics").text)
                       for s in family.samples}
            assert any(dict(labels).get("api") == api for _, labels in samples), api
