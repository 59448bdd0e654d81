"""NoValidHost in words and ``server create --dry-run`` against ``stratus serve``, through
the installed ``stratus`` client (subprocesses on loopback ports)."""

from __future__ import annotations

import json

from tests.functional.test_serve import Serve, serve  # noqa: F401 (the fixture)


def test_dry_run_and_the_fault_line_in_serve(serve):  # noqa: F811
    srv: Serve = serve("--hosts", "2")
    srv.client("service", "disable", "compute0002", "--reason", "maintenance")
    srv.client("flavor", "create", "huge", "--vcpus", "999", "--ram", "512", "--disk", "1")
    usage = srv.client_json("host", "usage")

    answer = srv.client_json("server", "create", "probe", "--flavor", "m1.tiny", "--count",
                             "2", "--dry-run")
    assert answer["fits"] is True and answer["placements"] == ["compute0001"] * 2
    assert [h["host"] for h in answer["hosts"]] == ["compute0001"]

    # 999 cores are over the default quota (20): the dry run says so, as the boot would.
    refused = srv.client("server", "create", "probe", "--flavor", "huge", "--dry-run",
                         check=False)
    assert (refused.returncode, refused.stderr.strip()) == (
        1, "error: would not fit: Quota exceeded for cores: Requested 999, but already used "
        "0 of 20 cores (left: 20 cores)")
    # Lifted, the scheduler is what says no.
    srv.client("quota", "set", "admin", "--cores", "-1")
    result = srv.client("server", "create", "probe", "--flavor", "huge", "--dry-run",
                        check=False)
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: would not fit: No valid host was found for 1 server: "
                           "needs VCPU 999, MEMORY_MB 512, DISK_GB 1; 2 hosts considered: "
                           "1 disabled (compute0002: maintenance), 1 lacks VCPU (largest free "
                           "on an eligible host: "), line
    # Nothing was claimed or recorded by either dry run.
    assert srv.client_json("host", "usage") == usage
    assert srv.client_json("server", "list") == []

    # A real boot ends in ERROR with the very same line as its fault.
    result = srv.client("server", "create", "big", "--flavor", "huge", "--wait", "--json",
                        check=False)
    assert result.returncode == 1
    assert result.stdout, result.stderr
    [server] = json.loads(result.stdout)
    assert server["fault"]["message"] == line.removeprefix("error: would not fit: ")
    assert srv.stop() == 0
