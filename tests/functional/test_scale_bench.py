"""bench/scale.py runs as committed, at a tiny size: serve with a few hosts filled by
multi-create in two stages, every server ACTIVE and claimed, and the memory and CPU
table printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_scale_bench_fills_a_small_serve() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", "--hosts", "8", "--servers", "20", "40",
         "--batch", "10", "--window", "20", "--quiet", "2", "--probe", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "all 8 hosts up" in out, out
    assert "filled to 20 servers" in out and "0 in ERROR" in out, out
    assert "filled to 40 servers" in out, out
    assert "| serve |" in out and "| all |" in out, out
