"""The compute API's server status: the vm_state, or the task a server is in the middle of
(Nova's state map), so clients polling for the end of a resize see it running."""

from __future__ import annotations

import pytest

from stratus.api.http.render import status
from stratus.api.store.servers import Server


def server(vm_state: str, task_state: str | None) -> Server:
    return Server("u", "n", "p", "u", vm_state, task_state, 1, "h", "h", None)


@pytest.mark.parametrize(("vm_state", "task_state", "shown"), [
    ("active", None, "ACTIVE"),
    ("active", "resize_prep", "RESIZE"),
    ("active", "resize_migrating", "RESIZE"),
    ("active", "resize_migrated", "RESIZE"),
    ("resized", None, "VERIFY_RESIZE"),
    ("resized", "resize_confirming", "VERIFY_RESIZE"),
    ("resized", "resize_reverting", "REVERT_RESIZE"),
    ("building", "scheduling", "BUILD"),
    ("error", None, "ERROR"),
])
def test_status_follows_the_task_in_progress(vm_state: str, task_state: str | None,
                                             shown: str) -> None:
    assert status(server(vm_state, task_state)) == shown
