"""Metering labels and rules through the network API: admins only, Neutron's checks
(one kind of prefix, overlapping rules refused), on every backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.functional.test_network_api import Net, error, make

pytestmark = pytest.mark.all_backends


@pytest.fixture
def net(empty_database_url) -> Iterator[Net]:
    made = make(empty_database_url)
    yield made
    made.app.deps.engine.dispose()


def test_labels_and_rules(net):
    label = net.made("/metering/metering-labels", "metering_label", name="web",
                     description="d")
    rule = net.made("/metering/metering-label-rules", "metering_label_rule",
                    metering_label_id=label["id"], direction="ingress",
                    remote_ip_prefix="10.0.0.0/24")
    assert (rule["excluded"], rule["remote_ip_prefix"]) == (False, "10.0.0.0/24")
    error(net.post("/metering/metering-label-rules", json={"metering_label_rule": {
        "metering_label_id": label["id"], "remote_ip_prefix": "10.0.0.128/25"}}), 409,
        "MeteringLabelRuleOverlaps")
    # Excluded, or the other direction, is another set of rules.
    assert net.post("/metering/metering-label-rules", json={"metering_label_rule": {
        "metering_label_id": label["id"], "remote_ip_prefix": "10.0.0.0/24",
        "direction": "egress"}}).status_code == 201
    error(net.post("/metering/metering-label-rules", json={"metering_label_rule": {
        "metering_label_id": label["id"], "remote_ip_prefix": "10.1.0.0/24",
        "source_ip_prefix": "10.2.0.0/24"}}), 400, "Invalid")
    error(net.post("/metering/metering-label-rules", json={"metering_label_rule": {
        "metering_label_id": label["id"]}}), 400, "Invalid")
    assert [r["id"] for r in net.get("/metering/metering-label-rules", params={
        "id": rule["id"]}).json()["metering_label_rules"]] == [rule["id"]]
    assert net.get("/metering/metering-labels", params={"id": "33"}).json() == {
        "metering_labels": []}

    user = net.as_user("alice:p1")
    assert user.get("/metering/metering-labels").json()["metering_labels"] == []
    error(user.get(f"/metering/metering-labels/{label['id']}"), 404, "MeteringLabelNotFound")
    error(user.post("/metering/metering-labels", json={"metering_label": {"name": "x"}}),
          403, "PolicyNotAuthorized")

    assert net.delete(f"/metering/metering-labels/{label['id']}").status_code == 204
    error(net.get(f"/metering/metering-label-rules/{rule['id']}"), 404,
          "MeteringLabelRuleNotFound")
