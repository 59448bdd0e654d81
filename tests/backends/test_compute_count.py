"""``stratus compute --count N``: one process simulating N hosts over RabbitMQ (how the
boots benchmark runs 1,000 hosts as separate processes): each host registers in
Placement and in its cell, heartbeats are written for all of them, and it stops cleanly.
"""

from __future__ import annotations

import httpx
import sqlalchemy as sa

from stratus.cells import schema as cs
from stratus.storage import engine as db
from tests.backends.test_distributed import PLACEMENT, Proc, bus_urls
from tests.functional import cli_helpers


def test_one_process_runs_many_simulated_hosts(rabbit_url, tmp_path):
    port = cli_helpers.free_port()
    placement_url = f"http://127.0.0.1:{port}"
    env = cli_helpers.clean_env()
    cell_db = f"sqlite:///{tmp_path / 'cell1.db'}"
    with bus_urls(rabbit_url, ["cell1"]) as (buses, _mode):
        placement = Proc(tmp_path, "placement-api", [
            "placement-api", "--db", f"sqlite:///{tmp_path / 'placement.db'}", "--port",
            str(port), "--data-dir", str(tmp_path)], env)
        computes = None
        try:
            placement.wait_for("Placement API:")
            bad = cli_helpers.run("stratus", "compute", "--host", "sim", "--count", "0",
                                  "--transport-url", buses["cell1"], "--data-dir",
                                  str(tmp_path), env=env, timeout=60)
            assert bad.returncode == 2
            assert bad.stderr.strip().splitlines() == ["error: --count must be at least 1"]
            computes = Proc(tmp_path, "computes", [
                "compute", "--host", "sim", "--count", "3", "--cell-db", cell_db,
                "--sync-db", "--transport-url", buses["cell1"], "--placement-url",
                placement_url, "--data-dir", str(tmp_path)], env)
            computes.wait_for("simulated hosts")
            assert "3 simulated hosts sim0001 to sim0003" in computes.output()
            found = httpx.get(f"{placement_url}/resource_providers", headers=PLACEMENT,
                              timeout=30).json()["resource_providers"]
            roots = [p["name"] for p in found if p["uuid"] == p["root_provider_uuid"]]
            assert sorted(roots) == ["sim0001", "sim0002", "sim0003"]
            engine = db.create_engine(cell_db)
            try:
                with db.read(engine) as conn:
                    rows = conn.execute(sa.select(cs.services.c.host,
                                                  cs.services.c.last_seen_up)).all()
            finally:
                engine.dispose()
            assert sorted(r.host for r in rows) == ["sim0001", "sim0002", "sim0003"]
            assert all(r.last_seen_up is not None for r in rows)   # heartbeats, together
            assert computes.stop() == 0
            assert "compute sim stopped" in computes.output()
        finally:
            if computes is not None:
                computes.kill()
            placement.kill()
