"""The backoff a caller uses against a peer that blinked: bounded, jittered, never silent."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.retry import NEVER, RetryPolicy, retrying


@given(deadline=st.floats(0.0, 120.0), first=st.floats(0.01, 2.0),
       cap=st.floats(0.05, 10.0), seed=st.integers(0, 2 ** 32))
def test_the_waits_never_pass_the_deadline_and_grow_no_larger_than_the_cap(
        deadline: float, first: float, cap: float, seed: int) -> None:
    waits = list(RetryPolicy(deadline, first, cap, random.Random(seed)).waits())
    assert sum(waits) <= deadline + 1e-9
    assert all(0 < w <= max(cap, first) for w in waits)
    if deadline > 0:
        assert sum(waits) == pytest.approx(deadline)   # retries until the deadline, then stops


def test_the_waits_are_jittered() -> None:
    a = list(RetryPolicy(30, rng=random.Random(1)).waits())
    b = list(RetryPolicy(30, rng=random.Random(2)).waits())
    assert a != b


def test_a_transient_failure_is_retried_until_it_passes() -> None:
    outcomes: list[Exception | str] = [ConnectionError("refused"), ConnectionError("reset"), "ok"]
    slept: list[float] = []

    def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert retrying(attempt, RetryPolicy(10), lambda e: isinstance(e, ConnectionError),
                    "GET /", sleep=slept.append) == "ok"
    assert len(slept) == 2


def test_other_failures_and_the_last_transient_one_are_raised_as_they_came() -> None:
    def refused() -> None:
        raise ConnectionError("refused")

    slept: list[float] = []
    with pytest.raises(ConnectionError, match="refused"):
        retrying(refused, RetryPolicy(1.0), lambda e: True, "GET /", sleep=slept.append)
    assert sum(slept) == pytest.approx(1.0)

    def broken() -> None:
        raise ValueError("bad answer")

    with pytest.raises(ValueError):
        retrying(broken, RetryPolicy(10), lambda e: isinstance(e, ConnectionError), "GET /",
                 sleep=slept.append)
    with pytest.raises(ConnectionError):
        retrying(refused, NEVER, lambda e: True, "GET /", sleep=slept.append)
