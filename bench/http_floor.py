"""The HTTP floor: what one exchange costs when the server does nothing at all.

    .venv/bin/python bench/http_floor.py            # median of 3,000 GETs
    .venv/bin/python bench/http_floor.py --n 10000

A process runs an asyncio server that parses nothing and answers every request
with the same bytes; the bench's own client (``bench/client.py``, as
``bench/candidates.py`` uses it) times GETs against it. No server can answer a
query in less, so it bounds the ratios ``bench/candidates.py`` can show: at 1,000
providers the reference answers ``limit=50`` in about 70-150 ms here, and 500x of
that leaves about this long for the whole exchange (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.client import Client

BODY = b'{"allocation_requests": [], "provider_summaries": {}}'
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
QUERY = "/allocation_candidates?resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&limit=50"


class _Fixed(asyncio.Protocol):
    """Answers each request (one per packet, as the bench's client sends them) at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if b"\r\n\r\n" in data:
            self.transport.write(RESPONSE)


def _serve(listener: socket.socket) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(_Fixed, sock=listener)
        await server.serve_forever()

    asyncio.run(main())


def measure(n: int, warmup: int = 300) -> list[float]:
    """Seconds per exchange, ``n`` of them, after ``warmup`` untimed ones."""
    # Listening before the server process starts: the client's first connection
    # waits in the backlog instead of being refused.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = multiprocessing.Process(target=_serve, args=(listener,), daemon=True)
    server.start()
    try:
        with Client(f"http://127.0.0.1:{port}") as client:
            for _ in range(warmup):
                client.get(QUERY)
            samples = []
            for _ in range(n):
                t0 = time.perf_counter()
                client.get(QUERY)
                samples.append(time.perf_counter() - t0)
        return samples
    finally:
        server.terminate()
        server.join()
        listener.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000, help="timed exchanges")
    args = parser.parse_args(argv)
    samples = measure(args.n)
    ordered = sorted(samples)
    print(f"do-nothing server, bench client, {args.n} GETs: "
          f"median {statistics.median(samples) * 1000:.3f} ms, "
          f"p95 {ordered[int(0.95 * (len(ordered) - 1))] * 1000:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
