"""Waiting for what another thread or process does, without a timing assertion."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def eventually(check: Callable[[], Any], seconds: float = 20.0, poll: float = 0.01) -> Any:
    """``check()``'s first truthy answer, or its last answer once ``seconds`` have passed
    (assert on it: the failure then shows what was seen)."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(poll)
