"""``stratus serve`` in the test's own process, every API on a free port."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stratus import config as configuration
from stratus.allinone import topology
from stratus.allinone.cloud import AllInOne


def serve_in(data_dir: Path, hosts: int = 1, cells: int = 1, prefix: str = "test",
             overrides: dict[tuple[str, str], Any] | None = None) -> AllInOne:
    """A serve of ``hosts`` simulated hosts in ``cells`` cells, not started, configured
    with ``overrides`` (section, option) -> value; its bus is its own."""
    config = configuration.load([], environ={}, overrides={
        ("DEFAULT", "data_dir"): str(data_dir), **(overrides or {})})
    return AllInOne(config, topology.from_counts(hosts, cells), placement_port=0, api_port=0,
                    network_port=0, identity_port=0, image_port=0,
                    bus_prefix=f"{prefix}-{uuidlib.uuid4().hex[:8]}")


@contextmanager
def running_serve(data_dir: Path, hosts: int = 1, cells: int = 1, prefix: str = "test",
                  overrides: dict[tuple[str, str], Any] | None = None) -> Iterator[AllInOne]:
    """``serve_in``'s serve, started; stopped on exit."""
    served = serve_in(data_dir, hosts, cells, prefix, overrides)
    served.start()
    try:
        yield served
    finally:
        served.stop()
