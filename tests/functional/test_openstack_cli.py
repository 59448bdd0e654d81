"""The real ``openstack`` CLI (python-openstackclient + osc-placement) against Stratus.

Runs tools/osc_scenario.py, which installs the two clients from PyPI into a
cached virtualenv (``$STRATUS_OSC_VENV``, default ~/.cache/stratus/osc-venv) the
first time, starts ``stratus placement-api`` on a scratch SQLite file and plays
an operator's session. Without network or virtualenv support the test skips
and says why; under CI that is a failure instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functional.cli_helpers import clean_env, unavailable

pytestmark = pytest.mark.long

TOOL = Path(__file__).resolve().parents[2] / "tools" / "osc_scenario.py"
EXIT_UNAVAILABLE = 3


def _scenario(tmp_path, service: str) -> list[dict]:
    report = tmp_path / "report.json"
    cmd = [sys.executable, str(TOOL), "--report", str(report), "--service", service]
    if os.environ.get("STRATUS_OSC_VENV"):
        cmd += ["--venv", os.environ["STRATUS_OSC_VENV"]]
    done = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(),
                          timeout=1700, stdin=subprocess.DEVNULL)
    if done.returncode == EXIT_UNAVAILABLE:
        unavailable(f"the openstack CLI is not available here: {done.stderr.strip()}")
    assert report.exists(), done.stdout + done.stderr
    results = json.loads(report.read_text())
    not_passed = [f"{r['status']}: {r['step']}: {r['detail']}" for r in results
                  if r["status"] != "passed"]
    assert not not_passed, "\n".join(not_passed)
    assert done.returncode == 0, done.stdout + done.stderr
    return results


@pytest.mark.timeout(1800)  # a first run installs the clients; each command takes seconds
def test_operator_scenario_with_openstack_cli(tmp_path):
    steps = {r["step"] for r in _scenario(tmp_path, "placement")}
    assert {"resource provider create", "allocation set / show",
            "usage show (provider, project, user)", "resource provider delete"} <= steps


@pytest.mark.timeout(1800)
def test_network_scenario_with_openstack_cli(tmp_path):
    """networks, subnets, QoS policies and ports through `openstack network|subnet|port|
    network qos` against `stratus network-api`, unchanged."""
    steps = {r["step"]: r["status"] for r in _scenario(tmp_path, "network")}
    assert steps["port create with a QoS policy: resource_request"] == "passed"
