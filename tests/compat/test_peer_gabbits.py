"""openstack-placement 16.0.0's own gabbi suites, run unmodified against a live Stratus server.

Every YAML file named in ``tools/gabbi_compat_expected.txt`` must pass; the list grows
as Stratus passes more files, so a listed file that fails is a regression.
``tools/gabbi_compat.py`` does the work (a cached gabbi virtualenv holding the peer's
YAML, a fresh database per file, the file's fixture built over HTTP); this test runs it
on the listed files and reports, per file, each failing gabbi test with what it asked
for and what it got.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.functional.cli_helpers import unavailable

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "gabbi_compat.py"
EXPECTED = ROOT / "tools" / "gabbi_compat_expected.txt"

# Building the gabbi virtualenv and running ~50 files takes a minute or two on a busy machine.
# Outside the default run (it builds a virtualenv from PyPI first): .ci/run runs it with
# the long group.
pytestmark = [pytest.mark.timeout(900), pytest.mark.long]


def expected_files() -> list[str]:
    lines = EXPECTED.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    # The gabbi virtualenv comes from PyPI; without PyPI the test cannot run at all.
    setup = subprocess.run([sys.executable, str(TOOL), "--setup-only"], capture_output=True,
                           text=True, timeout=300, check=False)
    if setup.returncode != 0:
        unavailable(f"cannot build the gabbi virtualenv:\n{setup.stderr[-2000:]}")
    out = tmp_path_factory.mktemp("gabbi") / "results.json"
    run = subprocess.run([sys.executable, str(TOOL), "--json", str(out), *expected_files()],
                         capture_output=True, text=True, timeout=540, check=False, cwd=ROOT)
    if not out.exists():
        pytest.fail(f"tools/gabbi_compat.py wrote no results (exit {run.returncode}):\n"
                    f"{run.stdout[-2000:]}\n{run.stderr[-4000:]}")
    return {r["file"]: r for r in json.loads(out.read_text(encoding="utf-8"))}


def _describe(result: dict[str, Any]) -> str:
    lines = [f"{result['file']}: {result['status']} ({result['passed']} passed, "
             f"{result['failed']} failed) {result['detail']}".rstrip()]
    for t in result["tests"]:
        if t["status"] in ("pass", "skip"):
            continue
        lines.append(f"- {t['name']}: {t['method']} {t['url']} expected {t['expected_status']}, "
                     f"got {t['actual_status'] or '?'}")
        lines.extend("    " + d for d in t["detail"].splitlines()[:15])
    return "\n".join(lines)


def test_allow_list_is_sorted_and_unique() -> None:
    files = expected_files()
    assert files == sorted(set(files)), "keep tools/gabbi_compat_expected.txt sorted, no repeats"


@pytest.mark.parametrize("name", expected_files())
def test_listed_gabbi_file_passes(name: str, results: dict[str, dict[str, Any]]) -> None:
    result = results.get(name)
    assert result is not None, f"{name} was not run"
    assert result["tests"], f"{name} ran no gabbi test: {result['detail']}"
    assert result["status"] == "pass", _describe(result)
