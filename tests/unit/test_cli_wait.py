"""``stratus server create --wait``: a server just accepted may answer 404 for a moment
(a zone tree's top, a cell); the wait goes on through that, and not forever."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.cli import client_resources
from stratus.cli.client_base import ClientError


class Api:
    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def call(self, method: str, path: str, **kw: Any) -> Any:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return {"server": answer}


def test_a_transient_404_is_waited_through(monkeypatch: Any) -> None:
    monkeypatch.setattr(client_resources.time, "sleep", lambda s: None)
    missing = ClientError("compute API: 404 Instance x could not be found.", 404)
    api = Api([missing, missing, {"id": "x", "status": "BUILD"},
               {"id": "x", "status": "ACTIVE"}])
    [server] = client_resources._wait(api, ["x"], timeout=60)   # type: ignore[arg-type]
    assert server["status"] == "ACTIVE"


def test_a_404_that_lasts_is_the_answer(monkeypatch: Any) -> None:
    clock = [0.0]
    monkeypatch.setattr(client_resources.time, "monotonic", lambda: clock[0])

    def sleep(seconds: float) -> None:
        clock[0] += 5.0

    monkeypatch.setattr(client_resources.time, "sleep", sleep)
    api = Api([ClientError("compute API: 404 gone", 404)])
    with pytest.raises(ClientError, match="404 gone"):
        client_resources._wait(api, ["x"], timeout=600)   # type: ignore[arg-type]


def test_other_errors_are_not_waited_through(monkeypatch: Any) -> None:
    api = Api([ClientError("compute API: 500 oops", 500)])
    with pytest.raises(ClientError, match="500 oops"):
        client_resources._wait(api, ["x"], timeout=600)   # type: ignore[arg-type]
