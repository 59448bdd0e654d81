"""Servers and case plan for the differential test against the reference Placement.

Enabled when ``CI`` is set, or locally with ``STRATUS_DIFFERENTIAL=1``,
``--differential-cases N``, ``STRATUS_DIFF_CASES=N`` or ``STRATUS_DIFF_CASE=w<seed>-q<i>``
(replay one case). Otherwise every test here skips and says how to enable it.

The reference (openstack-placement 16.0.0) is installed once into a cached
virtualenv (``tools/peer.py``); if that is impossible (no network) the tests
skip, or fail under ``CI``. ``STRATUS_DIFF_TARGET=peer`` compares the reference
with a second reference instance instead of Stratus: a self-check of the harness.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.functional.cli_helpers import unavailable
from tools import peer as peer_tool
from tools import procs
from tools.stratus_server import StratusServer

DEFAULT_CASES = 320
QUERIES_PER_WORLD = 32
DEFAULT_BASE_SEED = 1000
IN_CI = bool(os.environ.get("CI"))

OUTCOMES: Counter[str] = Counter()


def _cases(config: pytest.Config) -> int | None:
    opt = config.getoption("--differential-cases", default=None)
    if opt:
        return int(opt)
    env = os.environ.get("STRATUS_DIFF_CASES")
    return int(env) if env else None


def enabled(config: pytest.Config) -> bool:
    return bool(IN_CI or os.environ.get("STRATUS_DIFFERENTIAL") or _cases(config)
                or os.environ.get("STRATUS_DIFF_CASE"))


def plan(config: pytest.Config) -> tuple[list[int], list[int]]:
    """(world seeds, query indices per world) for this run."""
    one = os.environ.get("STRATUS_DIFF_CASE")
    if one:
        m = re.fullmatch(r"w(\d+)-q(\d+)", one.strip())
        if not m:
            raise pytest.UsageError("STRATUS_DIFF_CASE must look like w1003-q17")
        return [int(m.group(1))], [int(m.group(2))]
    cases = _cases(config) or DEFAULT_CASES
    base = int(os.environ.get("STRATUS_DIFF_SEED", DEFAULT_BASE_SEED))
    worlds = max(1, math.ceil(cases / QUERIES_PER_WORLD))
    per_world = min(QUERIES_PER_WORLD, cases)
    return [base + k for k in range(worlds)], list(range(per_world))


class Servers:
    def __init__(self, reference: peer_tool.PeerServer,
                 ours: peer_tool.PeerServer | StratusServer) -> None:
        self.reference = reference
        self.ours = ours

    def our_log(self, request_id: str, lines: int = 30) -> str:
        """The server log from the line naming ``request_id`` on (tracebacks of 500s)."""
        if self.ours.process is None:
            return ""
        text = self.ours.process.log_path.read_text(errors="replace").splitlines()
        for i, line in enumerate(text):
            if request_id in line:
                return "\n".join(text[i:i + lines])
        return ""


@pytest.fixture(scope="session")
def differential_servers(request: pytest.FixtureRequest) -> Iterator[Servers]:
    """The reference and Stratus, each on its own temporary SQLite database."""
    if not enabled(request.config):
        pytest.skip("differential test: set STRATUS_DIFFERENTIAL=1 (or CI, or pass "
                    "--differential-cases N) to run it against the reference Placement")
    try:
        peer_tool.ensure_venv()
    except (peer_tool.PeerUnavailable, OSError) as exc:
        unavailable(f"reference Placement {peer_tool.PEER_VERSION} cannot be installed: {exc}")
    # SQLite: the reference is only reliable there with one worker (PEER.md).
    reference = peer_tool.PeerServer("sqlite", workers=1)
    if os.environ.get("STRATUS_DIFF_TARGET") == "peer":
        ours: peer_tool.PeerServer | StratusServer = peer_tool.PeerServer("sqlite", workers=1)
    else:
        ours = StratusServer("sqlite", workers=1)
    # A SIGTERM (a CI timeout, say) must still stop both servers: make it an exit.
    procs.install_signal_cleanup()
    with reference, ours:
        yield Servers(reference, ours)


@pytest.fixture(scope="session")
def differential_outcomes() -> Counter[str]:
    return OUTCOMES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if OUTCOMES:
        parts = ", ".join(f"{n} {k}" for k, n in sorted(OUTCOMES.items()))
        terminalreporter.write_line(f"differential vs reference: {sum(OUTCOMES.values())} "
                                    f"cases: {parts}")
