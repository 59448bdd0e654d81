"""Policy decisions are remembered between looks at the policy file, never across them."""

from __future__ import annotations

import os

import pytest

from stratus.placement import errors
from stratus.placement.http.policy import RECHECK_SECONDS, Policy
from stratus.placement.http.wsgi import Context
from tests.conftest import make_config


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def allowed(policy: Policy, ctx: Context, action: str) -> bool:
    try:
        policy.authorize(ctx, action)
    except errors.Forbidden:
        return False
    return True


def test_a_changed_policy_file_applies_at_the_next_look(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text('"placement:resource_classes:list": "@"\n')
    clock = Clock()
    policy = Policy(make_config("sqlite://", oslo_policy__policy_file=str(path)), clock=clock)
    alice = Context("alice", "p1", ["member"])
    admin = Context("admin", "admin", ["admin"])
    assert allowed(policy, alice, "placement:resource_classes:list")
    assert not allowed(policy, alice, "placement:resource_classes:show")
    assert allowed(policy, admin, "placement:resource_classes:show")

    path.write_text('"placement:resource_classes:list": "role:admin"\n')
    stat = os.stat(path)   # a later mtime, whatever the file system's resolution
    os.utime(path, (stat.st_atime, stat.st_mtime + 10))
    # Until the next look the remembered decisions stand...
    assert allowed(policy, alice, "placement:resource_classes:list")
    clock.t += RECHECK_SECONDS
    # ...then the file is read again and nothing remembered survives.
    assert not allowed(policy, alice, "placement:resource_classes:list")
    assert allowed(policy, admin, "placement:resource_classes:list")


@pytest.mark.parametrize("roles,project,expected", [
    (["reader"], "p1", True),      # a reader of the project asked about
    (["reader"], "p2", False),     # ...of another project
    (["member"], "p1", False),
    (["admin"], "p2", True),
])
def test_decisions_depend_on_the_caller_and_the_target(roles, project, expected):
    policy = Policy(make_config("sqlite://"), clock=Clock())
    for _ in range(2):   # the second answer comes from what was remembered
        ctx = Context("u", project, roles)
        try:
            policy.authorize(ctx, "placement:usages", {"project_id": "p1"})
            got = True
        except errors.Forbidden:
            got = False
        assert got is expected
