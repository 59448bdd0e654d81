"""The steps a boot takes, counted by every process: database transactions (read, write,
autocommit) and RPC messages sent (per service and method), read from each process's
``/metrics`` (``stratus_db_transactions_total``, ``stratus_bus_messages_sent_total``)
before and after a round.

``stratus serve`` is one process (its API's ``/metrics`` has them all); a distributed
deployment's API and Placement serve ``/metrics`` on their own port, and its
scheduler, conductors and computes are started with ``--metrics-port``
(:func:`metered`).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Mapping
from typing import Any

import httpx

from tests.functional import cli_helpers

Counts = dict[str, collections.Counter[str]]   # role -> step -> how many so far

# Roles that serve no HTTP API: started with --metrics-port.
EXPORTERS = ("scheduler", "conductor", "compute")


def metered(cloud: Any) -> dict[str, str]:
    """Make ``cloud`` (tests/backends/test_distributed.Cloud, before its ``set_up``) start
    its scheduler and conductors with ``--metrics-port``; role -> metrics URL, filled as
    processes start (the API's and Placement's are known already)."""
    urls = {"api": f"{cloud.api_url}/metrics", "placement-api": f"{cloud.placement_url}/metrics"}
    start = cloud.start

    def start_metered(name: str, *args: str, ready: str) -> Any:
        if args and args[0] in EXPORTERS:
            port = cli_helpers.free_port()
            urls[name] = f"http://127.0.0.1:{port}/metrics"
            args = (*args, "--metrics-port", str(port))
        return start(name, *args, ready=ready)

    cloud.start = start_metered
    return urls


def parse(text: str) -> collections.Counter[str]:
    """The step counters of one ``/metrics`` page: ``db read``, ``db write``,
    ``db autocommit``, and ``call scheduler.select_destinations`` and the like."""
    out: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        if line.startswith("stratus_db_transactions_total{"):
            labels, value = _sample(line)
            out[f"db {labels['kind']}"] += value
        elif line.startswith("stratus_bus_messages_sent_total{"):
            labels, value = _sample(line)
            out[f"{labels['kind']} {labels['service']}.{labels['method']}"] += value
    return out


def _sample(line: str) -> tuple[dict[str, str], float]:
    head, _, value = line.rpartition(" ")
    inner = head[head.index("{") + 1:head.rindex("}")]
    labels = {}
    for part in inner.split('",'):
        key, _, val = part.partition("=")
        labels[key.strip()] = val.strip().strip('"')
    return labels, float(value)


class StepMeter:
    """``urls``: role -> its ``/metrics`` URL. A role that does not answer counts nothing."""

    def __init__(self, urls: Mapping[str, str]) -> None:
        self.urls = dict(urls)

    def read(self) -> Counts:
        out: Counts = {}
        with httpx.Client(timeout=30) as http:
            for role, url in self.urls.items():
                with contextlib.suppress(httpx.HTTPError):
                    out[role] = parse(http.get(url).text)
        return out

    @staticmethod
    def spent(before: Counts, after: Counts) -> Counts:
        return {role: collections.Counter({k: v - before.get(role, {}).get(k, 0)
                                           for k, v in counts.items()
                                           if v - before.get(role, {}).get(k, 0) > 0})
                for role, counts in after.items()}


def report(spent: Counts, boots: int) -> str:
    """Per role, the steps per boot (transactions and messages sent), and the totals."""
    lines = ["| process | read tx | write tx | autocommit reads | messages sent (per boot) |",
             "|---|---:|---:|---:|---|"]
    total: collections.Counter[str] = collections.Counter()
    for role in sorted(spent):
        counts = spent[role]
        total.update(counts)
        sent = ", ".join(f"{k} {v / boots:.2f}" for k, v in sorted(counts.items())
                         if not k.startswith("db "))
        lines.append(f"| {role} | {counts['db read'] / boots:.2f} | "
                     f"{counts['db write'] / boots:.2f} | "
                     f"{counts['db autocommit'] / boots:.2f} | {sent or '-'} |")
    messages = sum(v for k, v in total.items() if not k.startswith("db "))
    lines.append(f"| **all** | {total['db read'] / boots:.2f} | "
                 f"{total['db write'] / boots:.2f} | {total['db autocommit'] / boots:.2f} | "
                 f"{messages / boots:.2f} |")
    return "\n".join(lines)
