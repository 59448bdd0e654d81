"""What the backend tests share: the RabbitMQ they are pointed at (``.ci/run`` sets it)."""

from __future__ import annotations

import os

import pytest

from stratus import bus
from stratus.bus.amqp import AmqpTransport
from tests.functional.cli_helpers import unavailable

RABBIT_ENV = "STRATUS_TEST_RABBIT_URL"


@pytest.fixture(scope="module")
def rabbit_url() -> str:
    """The broker's URL, once it has answered; skips (fails under CI) without one."""
    base = os.environ.get(RABBIT_ENV, "")
    if not base:
        unavailable(f"RabbitMQ tests need ${RABBIT_ENV} (see .ci/run)")
    try:
        AmqpTransport(base, connect_timeout=3).close()
    except bus.TransportError as exc:
        unavailable(f"RabbitMQ at ${RABBIT_ENV} is unreachable: {exc}")
    return base
