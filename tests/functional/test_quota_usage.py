"""What a project uses, as a quota check counts it: its servers, and the cores and RAM of
their flavors, summed in SQL from the sizes kept beside each request spec, equal to
adding up the flavors of the servers one by one (a server buried in cell0 counts as a
server holding nothing; one being deleted, or another project's, not at all)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.api import schema as s
from stratus.api.store import quotas
from stratus.api.store import servers as server_store
from stratus.cells import mappings
from stratus.conductor import records
from stratus.storage import engine as db

FLAVORS = st.fixed_dictionaries({"vcpus": st.integers(0, 64),
                                 "memory_mb": st.integers(0, 1 << 20)})
SERVERS = st.lists(st.fixed_dictionaries({
    "project": st.sampled_from(["p1", "p2"]),
    "user": st.sampled_from(["u1", "u2"]),
    "flavor": FLAVORS,
    # where it is: not scheduled yet, in cell1, buried in cell0
    "where": st.sampled_from([None, "cell1", "cell0"]),
    "deleting": st.booleans(),
    # the spec rewritten by the conductor (a resize's new flavor), or as the API wrote it
    "resized_to": st.none() | FLAVORS,
}), max_size=12)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = Path(tmp_path_factory.mktemp("quota-usage")) / "api.db"
    engine = db.create_engine(f"sqlite:///{path}")
    s.metadata.create_all(engine)
    with db.write(engine) as conn:
        mappings.create_cell(conn, "cell0", "inproc://cell0", "sqlite://",
                             uuid=mappings.CELL0_UUID)
        mappings.create_cell(conn, "cell1", "inproc://cell1", "sqlite://")
    yield engine
    engine.dispose()


def expected(servers: list[dict[str, Any]], project: str,
             user: str | None) -> tuple[int, int, int]:
    mine = [v for v in servers if v["project"] == project and not v["deleting"]
            and (user is None or v["user"] == user)]
    held = [v["resized_to"] or v["flavor"] for v in mine if v["where"] != "cell0"]
    return (len(mine), sum(f["vcpus"] for f in held), sum(f["memory_mb"] for f in held))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(servers=SERVERS)
def test_usage_sums_the_flavors_of_the_projects_live_servers(engine: Any,
                                                             servers: list[dict[str, Any]]):
    with db.write(engine) as conn:
        for table in (s.request_specs, s.build_requests, s.instance_mappings):
            conn.execute(sa.delete(table))
        cells = {c.name: c for c in mappings.list_cells(conn)}
        for n, server in enumerate(servers):
            uuid = f"00000000-0000-0000-0000-{n:012d}"
            server_store.create_build_requests(conn, [{
                "uuid": uuid, "name": f"s{n}", "project_id": server["project"],
                "user_id": server["user"]}], {"flavor": server["flavor"]})
            if server["where"] is not None:
                records.map_instance(conn, uuid, cells[server["where"]], server["project"],
                                     server["user"])
            if server["resized_to"] is not None:
                records.save_request_spec(conn, uuid, {"flavor": server["resized_to"]})
            if server["deleting"]:
                server_store.forget(conn, uuid)
    with db.read(engine) as conn:
        for project in ("p1", "p2", "p3"):
            for user in (None, "u1"):
                used = quotas.usage(conn, project, user_id=user)
                assert (used.instances, used.cores, used.ram) == expected(
                    servers, project, user)
                assert quotas.usage(conn, project, servers=False, user_id=user).instances == 0
