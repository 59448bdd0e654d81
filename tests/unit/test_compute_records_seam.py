"""Issue 29's small rules: which bus sender may speak for which host, and a compute
that cannot keep its records through conductors pinned below 1.4."""

from __future__ import annotations

import pytest

from stratus.conductor.compute_records import sender_owns
from tests.functional import cli_helpers


@pytest.mark.parametrize(("sender", "host", "owns"), [
    ("compute:cmp-a", "cmp-a", True),
    ("compute:cmp-a", "cmp-b", False),
    ("compute:cmp-a", "cmp-a2", False),          # not a --count host of cmp-a
    ("compute:sim", "sim0042", True),            # `stratus compute --host sim --count N`
    ("compute:sim", "sim42", False),
    ("conductor:c1", "cmp-a", True),             # the control plane is not host-bound
    (None, "cmp-a", True),                       # an in-process call
])
def test_a_compute_speaks_only_for_its_own_hosts(sender, host, owns):
    assert sender_owns(sender, host) is owns


def test_a_compute_pinned_to_old_conductors_needs_its_database(tmp_path):
    env = cli_helpers.clean_env(OS_UPGRADE_LEVELS__CONDUCTOR="1.3")
    done = cli_helpers.run("stratus", "compute", "--host", "cmp-x", "--transport-url",
                           "inproc://pinned", "--data-dir", str(tmp_path), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "[upgrade_levels] conductor = 1.3" in done.stderr
    assert "--cell-db" in done.stderr and "Traceback" not in done.stderr
