"""Claims and inventory changes read the running usage totals, never the allocations.

``inventories.used`` is kept by every allocation write, so neither a claim's
capacity check nor an inventory change's in-use check needs to sum what a
provider holds: their cost does not grow with what a host already runs. (Before
the totals, claims summed a provider's allocations, and on MariaDB the optimizer
could take the class index for that sum and read every allocation of the class
in the cloud: 6,000 rows for one host's 300 at 2,000 claims over 20 hosts.)
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from tests.functional.test_allocations import add_provider, body

pytestmark = pytest.mark.all_backends

HOSTS, CLAIMS_PER_HOST = 3, 4
RESOURCES = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 10}
INVENTORY = {"VCPU": {"total": 1000}, "MEMORY_MB": {"total": 10**6}, "DISK_GB": {"total": 10**5}}


def _world(client: Any) -> list[str]:
    """HOSTS hosts, each holding CLAIMS_PER_HOST claims of RESOURCES."""
    hosts = [add_provider(client, f"host{i}", INVENTORY) for i in range(HOSTS)]
    for host in hosts:
        for _ in range(CLAIMS_PER_HOST):
            resp = client.put(f"/allocations/{uuid.uuid4()}", json=body(
                {host: RESOURCES}, generation=None, consumer_type="INSTANCE"))
            assert resp.status_code == 204, resp.text
    return hosts


class _Captured:
    """The statements an engine sends that read the allocations table."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.statements: list[str] = []

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if "FROM allocations" in statement:
            self.statements.append(statement)

    def __enter__(self) -> _Captured:
        sa.event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(self.engine, "before_cursor_execute", self._seen)


def test_a_claim_reads_no_allocations(client, placement_app):
    hosts = _world(client)
    with _Captured(placement_app.engine) as captured:
        resp = client.put(f"/allocations/{uuid.uuid4()}",
                          json=body({hosts[1]: RESOURCES}, generation=None,
                                    consumer_type="INSTANCE"))
        assert resp.status_code == 204, resp.text
    assert captured.statements == []
    usage = client.get(f"/resource_providers/{hosts[1]}/usages").json()["usages"]
    assert usage == {rc: (CLAIMS_PER_HOST + 1) * used for rc, used in RESOURCES.items()}


def test_an_inventory_change_reads_no_allocations(client, placement_app):
    hosts = _world(client)
    generation = client.get(f"/resource_providers/{hosts[2]}").json()["generation"]
    with _Captured(placement_app.engine) as captured:
        # Removing a class in use is refused: the in-use check reads the totals.
        resp = client.put(f"/resource_providers/{hosts[2]}/inventories", json={
            "resource_provider_generation": generation,
            "inventories": {"VCPU": {"total": 32}, "MEMORY_MB": {"total": 32768}}})
        assert resp.status_code == 409, resp.text
        assert resp.json()["errors"][0]["code"] == "placement.inventory.inuse"
        resp = client.put(f"/resource_providers/{hosts[2]}/inventories", json={
            "resource_provider_generation": generation,
            "inventories": {"VCPU": {"total": 32}, "MEMORY_MB": {"total": 32768},
                            "DISK_GB": {"total": 1000}}})
        assert resp.status_code == 200, resp.text
    assert captured.statements == []
