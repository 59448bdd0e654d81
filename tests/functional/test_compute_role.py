"""The ``compute`` role: a compute host's own Keystone user may keep its own providers
in Placement, and nothing else.

Through HTTP with ``[api] auth_strategy = keystone``: the real keystonemiddleware
auth_token in front of the app, only its token lookup stubbed with token bodies in
Keystone's v3 format (as in test_cors_keystone), so the user name, roles and the
stripping of identity headers a client sends are keystonemiddleware's own.
"""

from __future__ import annotations

import logging
import os
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import config as configuration
from stratus.placement.http.app import PlacementApp, build_wsgi
from stratus.storage import engine as db

DOMAIN = {"id": "default", "name": "Default"}
CMP1, CMP1_NUMA, CMP2 = (str(uuidlib.uuid4()) for _ in range(3))


def _token(user: str, roles: list[str]) -> dict[str, Any]:
    return {"token": {
        "methods": ["password"],
        "issued_at": "2020-01-01T00:00:00.000000Z",
        "expires_at": "2999-01-01T00:00:00.000000Z",
        "user": {"id": f"uid-{user}", "name": user, "domain": DOMAIN},
        "roles": [{"id": f"rid-{r}", "name": r} for r in roles],
        "project": {"id": "p-service", "name": "service", "domain": DOMAIN},
        "catalog": [],
    }}


TOKENS = {
    "tok-admin": _token("cloud-admin", ["admin", "member", "reader"]),
    "tok-nova": _token("nova", ["service"]),
    "tok-cmp1": _token("cmp1", ["compute"]),
    "tok-cmp2": _token("cmp2", ["compute"]),
    "tok-cmp3": _token("cmp3", ["compute"]),
    # Named as a host but without the role: the name alone grants nothing.
    "tok-alice": _token("cmp1", ["member", "reader"]),
}


def _build(database_url: str, tmp_path: Any, monkeypatch: Any, policy: str = "") -> PlacementApp:
    try:
        from keystonemiddleware import auth_token
    except ImportError:
        reason = "keystonemiddleware is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI installs it, so this is a failure")
        pytest.skip(reason)
    from keystonemiddleware.auth_token import _exceptions as ksm_exceptions

    def fetch_token(self: Any, token: str, allow_expired: bool = False) -> dict[str, Any]:
        if token not in TOKENS:
            raise ksm_exceptions.InvalidToken("unknown token")
        return TOKENS[token]

    monkeypatch.setattr(auth_token.AuthProtocol, "fetch_token", fetch_token)
    conf = tmp_path / "placement.conf"
    text = (f"[placement_database]\nconnection = {database_url}\n"
            "[api]\nauth_strategy = keystone\n"
            "[keystone_authtoken]\nwww_authenticate_uri = http://127.0.0.1:5000/v3\n")
    if policy:
        (tmp_path / "policy.yaml").write_text(policy)
        text += "[oslo_policy]\npolicy_file = policy.yaml\n"
    conf.write_text(text)
    return PlacementApp(configuration.load([str(conf)], environ={}),
                        db.create_engine(database_url))


class Placement:
    def __init__(self, app: PlacementApp) -> None:
        self.http = httpx.Client(transport=httpx.WSGITransport(app=build_wsgi(app)),
                                 base_url="http://placement.test")

    def __call__(self, token: str, method: str, path: str, json: Any = None,
                 **headers: str) -> httpx.Response:
        h = {"OpenStack-API-Version": "placement latest", "X-Auth-Token": token, **headers}
        return self.http.request(method, path, json=json, headers=h)

    def ok(self, token: str, method: str, path: str, json: Any = None) -> Any:
        resp = self(token, method, path, json)
        assert resp.status_code in (200, 201, 204), (method, path, resp.text)
        return resp.json() if resp.content else None

    def generation(self, uuid: str) -> int:
        return int(self.ok("tok-admin", "GET", f"/resource_providers/{uuid}")["generation"])

    def set_vcpu(self, token: str, uuid: str, total: int) -> httpx.Response:
        return self(token, "PUT", f"/resource_providers/{uuid}/inventories",
                    {"resource_provider_generation": self.generation(uuid),
                     "inventories": {"VCPU": {"total": total}}})

    def vcpu(self, uuid: str) -> int | None:
        body = self.ok("tok-admin", "GET", f"/resource_providers/{uuid}/inventories")
        vcpu = body["inventories"].get("VCPU")
        return None if vcpu is None else int(vcpu["total"])


def _fleet(app: PlacementApp) -> Placement:
    """cmp1 (a root with a NUMA child) and cmp2, made by the service user."""
    p = Placement(app)
    for uuid, name, parent in ((CMP1, "cmp1", None), (CMP1_NUMA, "cmp1_NUMA0", CMP1),
                               (CMP2, "cmp2", None)):
        body: dict[str, Any] = {"uuid": uuid, "name": name}
        if parent:
            body["parent_provider_uuid"] = parent
        p.ok("tok-nova", "POST", "/resource_providers", body)
    p.ok("tok-nova", "PUT", f"/resource_providers/{CMP2}/inventories",
         {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
    return p


@pytest.fixture
def placement(database_url, tmp_path, monkeypatch) -> Iterator[Placement]:
    app = _build(database_url, tmp_path, monkeypatch)
    yield _fleet(app)
    app.engine.dispose()


def _refused(resp: httpx.Response) -> None:
    assert resp.status_code == 403, resp.text
    error = resp.json()["errors"][0]
    assert (error["status"], error["title"]) == (403, "Forbidden")
    assert error["detail"].startswith("Policy does not allow placement:")


# ---- what a compute may do --------------------------------------------------------


def test_compute_keeps_its_own_tree(placement):
    p = placement
    assert p.set_vcpu("tok-cmp1", CMP1, 16).status_code == 200
    assert p.set_vcpu("tok-cmp1", CMP1_NUMA, 4).status_code == 200
    assert (p.vcpu(CMP1), p.vcpu(CMP1_NUMA)) == (16, 4)
    # Custom traits and classes (made by anyone with the role), then set on its own provider.
    p.ok("tok-cmp1", "PUT", "/traits/CUSTOM_FAST_DISK")
    p.ok("tok-cmp1", "POST", "/resource_classes", {"name": "CUSTOM_FPGA"})
    p.ok("tok-cmp1", "PUT", f"/resource_providers/{CMP1}/traits",
         {"resource_provider_generation": p.generation(CMP1),
          "traits": ["CUSTOM_FAST_DISK", "HW_CPU_X86_AVX2"]})
    agg = str(uuidlib.uuid4())
    p.ok("tok-cmp1", "PUT", f"/resource_providers/{CMP1}/aggregates",
         {"resource_provider_generation": p.generation(CMP1), "aggregates": [agg]})
    # A new child in its tree, renamed, then deleted.
    child = p.ok("tok-cmp1", "POST", "/resource_providers",
                 {"name": "cmp1_pf0", "parent_provider_uuid": CMP1})["uuid"]
    p.ok("tok-cmp1", "PUT", f"/resource_providers/{child}",
         {"name": "cmp1_pf1", "parent_provider_uuid": CMP1})
    p.ok("tok-cmp1", "DELETE", f"/resource_providers/{child}")
    # It reads its own allocations, and providers and inventories of any host.
    assert p.ok("tok-cmp1", "GET", f"/resource_providers/{CMP1}/allocations")["allocations"] == {}
    names = {rp["name"] for rp in p.ok("tok-cmp1", "GET", "/resource_providers")[
        "resource_providers"]}
    assert names >= {"cmp1", "cmp1_NUMA0", "cmp2"}
    assert p.ok("tok-cmp1", "GET", f"/resource_providers/{CMP2}/inventories")[
        "inventories"]["VCPU"]["total"] == 8


def test_compute_creates_its_own_root_only(placement):
    p = placement
    made = p("tok-cmp3", "POST", "/resource_providers", {"name": "cmp3"})
    assert made.status_code == 200
    _refused(p("tok-cmp3", "POST", "/resource_providers", {"name": "cmp4"}))
    _refused(p("tok-cmp3", "POST", "/resource_providers",
               {"name": "cmp3_child_of_cmp2", "parent_provider_uuid": CMP2}))
    names = {rp["name"] for rp in p.ok("tok-admin", "GET", "/resource_providers")[
        "resource_providers"]}
    assert "cmp4" not in names and "cmp3_child_of_cmp2" not in names


# ---- what it may not --------------------------------------------------------------


def test_compute_refused_on_another_hosts_provider_and_logged(placement, caplog):
    p = placement
    with caplog.at_level(logging.WARNING, logger="stratus.placement.http.wsgi"):
        _refused(p.set_vcpu("tok-cmp1", CMP2, 1))
    assert p.vcpu(CMP2) == 8
    warning = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("cmp1" in m and CMP2 in m and "'cmp2'" in m for m in warning), warning
    gen = p.generation(CMP2)
    for method, path, body in [
        ("DELETE", f"/resource_providers/{CMP2}/inventories", None),
        ("DELETE", f"/resource_providers/{CMP2}/inventories/VCPU", None),
        ("PUT", f"/resource_providers/{CMP2}/traits",
         {"resource_provider_generation": gen, "traits": ["COMPUTE_STATUS_DISABLED"]}),
        ("PUT", f"/resource_providers/{CMP2}/aggregates",
         {"resource_provider_generation": gen, "aggregates": []}),
        ("PUT", f"/resource_providers/{CMP2}", {"name": "stolen"}),
        ("DELETE", f"/resource_providers/{CMP2}", None),
        ("GET", f"/resource_providers/{CMP2}/allocations", None),
    ]:
        _refused(p("tok-cmp1", method, path, body))
    assert p.generation(CMP2) == gen
    assert p.ok("tok-admin", "GET", f"/resource_providers/{CMP2}")["name"] == "cmp2"


def test_compute_cannot_move_its_tree_onto_another_host(placement):
    p = placement
    # Re-parent its NUMA child under cmp2; rename its root away from its host name.
    _refused(p("tok-cmp1", "PUT", f"/resource_providers/{CMP1_NUMA}",
               {"name": "cmp1_NUMA0", "parent_provider_uuid": CMP2}))
    _refused(p("tok-cmp1", "PUT", f"/resource_providers/{CMP1}", {"name": "cmp9"}))
    numa = p.ok("tok-admin", "GET", f"/resource_providers/{CMP1_NUMA}")
    assert numa["parent_provider_uuid"] == CMP1
    assert p.ok("tok-admin", "GET", f"/resource_providers/{CMP1}")["name"] == "cmp1"


def test_compute_refused_on_allocations_candidates_and_reshaper(placement):
    p = placement
    p.ok("tok-nova", "PUT", f"/resource_providers/{CMP1}/inventories",
         {"resource_provider_generation": p.generation(CMP1),
          "inventories": {"VCPU": {"total": 8}}})
    consumer = str(uuidlib.uuid4())
    body = {"allocations": {CMP1: {"resources": {"VCPU": 1}}}, "project_id": "p",
            "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
    _refused(p("tok-cmp1", "PUT", f"/allocations/{consumer}", body))
    _refused(p("tok-cmp1", "POST", "/allocations", {consumer: body}))
    _refused(p("tok-cmp1", "GET", f"/allocations/{consumer}"))
    _refused(p("tok-cmp1", "GET", "/allocation_candidates?resources=VCPU:1"))
    _refused(p("tok-cmp1", "GET", "/usages?project_id=p"))
    _refused(p("tok-cmp1", "POST", "/reshaper", {"inventories": {}, "allocations": {}}))
    _refused(p("tok-cmp1", "DELETE", "/traits/CUSTOM_ANY"))
    # The service may: the allocation exists only once it made it.
    assert p.ok("tok-admin", "GET", f"/allocations/{consumer}")["allocations"] == {}
    p.ok("tok-nova", "PUT", f"/allocations/{consumer}", body)
    assert p.ok("tok-admin", "GET", f"/allocations/{consumer}")["allocations"][CMP1][
        "resources"] == {"VCPU": 1}


def test_compute_frees_only_consumers_wholly_in_its_tree(placement):
    """As Nova's source compute frees an evacuated server's allocations when it returns."""
    p = placement
    p.ok("tok-nova", "PUT", f"/resource_providers/{CMP1}/inventories",
         {"resource_provider_generation": p.generation(CMP1),
          "inventories": {"VCPU": {"total": 8}}})

    def allocate(*providers: str) -> str:
        consumer = str(uuidlib.uuid4())
        p.ok("tok-nova", "PUT", f"/allocations/{consumer}", {
            "allocations": {rp: {"resources": {"VCPU": 1}} for rp in providers},
            "project_id": "p", "user_id": "u", "consumer_generation": None,
            "consumer_type": "MIGRATION"})
        return consumer

    theirs, spanning, mine = allocate(CMP2), allocate(CMP1, CMP2), allocate(CMP1)
    _refused(p("tok-cmp1", "DELETE", f"/allocations/{theirs}"))
    _refused(p("tok-cmp1", "DELETE", f"/allocations/{spanning}"))
    for consumer in (theirs, spanning):
        assert p.ok("tok-admin", "GET", f"/allocations/{consumer}")["allocations"]
    assert p("tok-cmp1", "DELETE", f"/allocations/{mine}").status_code == 204
    assert p.ok("tok-admin", "GET", f"/allocations/{mine}")["allocations"] == {}
    # Freed already (or never held): 404, which the compute's client reads as "none".
    assert p("tok-cmp1", "DELETE", f"/allocations/{mine}").status_code == 404
    assert p("tok-cmp2", "DELETE", f"/allocations/{spanning}").status_code == 403


def test_name_without_role_and_spoofed_headers_grant_nothing(placement):
    p = placement
    _refused(p.set_vcpu("tok-alice", CMP1, 2))  # user named cmp1, no compute role
    spoof = {"X-User-Name": "cmp2", "X-Roles": "admin", "X-Identity-Status": "Confirmed"}
    resp = p("tok-cmp1", "PUT", f"/resource_providers/{CMP2}/inventories",
             {"resource_provider_generation": p.generation(CMP2),
              "inventories": {"VCPU": {"total": 1}}}, **spoof)
    _refused(resp)
    assert p.vcpu(CMP2) == 8


def test_admin_and_service_tokens_still_write_every_provider(placement):
    p = placement
    assert p.set_vcpu("tok-admin", CMP2, 12).status_code == 200
    assert p.set_vcpu("tok-nova", CMP1, 6).status_code == 200
    assert (p.vcpu(CMP2), p.vcpu(CMP1)) == (12, 6)


def test_missing_provider_is_404_to_a_compute(placement):
    missing = str(uuidlib.uuid4())
    resp = placement("tok-cmp1", "PUT", f"/resource_providers/{missing}/inventories",
                     {"resource_provider_generation": 0, "inventories": {}})
    assert resp.status_code == 404


def test_policy_file_can_take_the_compute_role_back(database_url, tmp_path, monkeypatch):
    """Operators tune it with Placement's policy keys: here computes lose all writes."""
    app = _build(database_url, tmp_path, monkeypatch,
                 policy='"compute_own_provider_api": "!"\n')
    try:
        p = _fleet(app)
        _refused(p.set_vcpu("tok-cmp1", CMP1, 16))
        assert p("tok-cmp1", "GET", f"/resource_providers/{CMP1}").status_code == 200
        assert p.set_vcpu("tok-nova", CMP1, 16).status_code == 200
    finally:
        app.engine.dispose()
