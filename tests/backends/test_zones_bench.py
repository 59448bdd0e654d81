"""bench/zones.py runs as committed: its quick mode (zone processes over RabbitMQ, a
flat scheduler beside them) makes every decision and prints its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_zones_bench_quick_mode_runs(rabbit_url: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench.zones", "--quick", "--rabbit",
                           rabbit_url, "--workdir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if "decisions/s  p50" in line]
    assert len(rows) == 3, done.stdout     # flat, 2 levels, 3 levels
    assert not any("failed)" in r for r in rows), rows
    assert "| 200 | 2 levels: 2 leaves |" in done.stdout
