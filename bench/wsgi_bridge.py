"""The HTTP server's own CPU per request: uvicorn with a2wsgi against uvicorn with
``stratus.web.wsgi_bridge.WSGIBridge``, the same small WSGI app behind both.

    .venv/bin/python -m bench.wsgi_bridge            # 3 runs of 3,000 POSTs each side
    .venv/bin/python -m bench.wsgi_bridge --n 5000 --runs 5

Each run starts the server in a process of its own, warms it with 300 requests, then
sends ``--n`` POSTs (a small JSON body, a 2 KiB JSON answer, as a server create or a
short listing) over one keep-alive connection and reads the server process's CPU from
``/proc`` before and after. Sides alternate run by run; medians are printed with the
ratio. This is what the compute API's process spends per request before its own work.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.cpu import process_seconds

ANSWER = json.dumps({"servers": [{"id": f"{i:032x}", "name": f"server-{i}",
                                  "status": "ACTIVE"} for i in range(30)]}).encode()
ASKED = b'{"server": {"name": "vm", "flavorRef": "1"}}'
SIDES = ("a2wsgi", "WSGIBridge")


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(ANSWER)))])
    return [ANSWER]


def serve(side: str, port: int) -> None:
    import uvicorn

    from stratus.web.server import UVICORN_OPTIONS

    asgi: Any
    if side == "a2wsgi":
        from a2wsgi import WSGIMiddleware
        asgi = WSGIMiddleware(app, workers=16)  # type: ignore[arg-type]
    else:
        from stratus.web.wsgi_bridge import WSGIBridge
        asgi = WSGIBridge(app, threads=16, max_body_bytes=1 << 20)
    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                **UVICORN_OPTIONS)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_run(side: str, n: int) -> float:
    """Server CPU milliseconds per request."""
    port = free_port()
    server = multiprocessing.Process(target=serve, args=(side, port), daemon=True)
    server.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.get("/")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            for _ in range(300):
                client.post("/servers", content=ASKED)
            assert server.pid is not None
            before = process_seconds(server.pid)
            for _ in range(n):
                client.post("/servers", content=ASKED)
            return (process_seconds(server.pid) - before) / n * 1000
    finally:
        server.terminate()
        server.join(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="requests per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per side, alternating")
    args = parser.parse_args(argv)
    got: dict[str, list[float]] = {side: [] for side in SIDES}
    for run in range(args.runs):
        for side in SIDES:
            got[side].append(one_run(side, args.n))
            print(f"# run {run + 1} {side}: {got[side][-1]:.3f} ms", file=sys.stderr,
                  flush=True)
    medians = {side: statistics.median(v) for side, v in got.items()}
    print("| server CPU per request (ms) | median | runs |")
    print("|---|---:|---|")
    for side in SIDES:
        print(f"| uvicorn + {side} | {medians[side]:.2f} | "
              + ", ".join(f"{v:.2f}" for v in got[side]) + " |")
    print(f"\na2wsgi / WSGIBridge: {medians['a2wsgi'] / medians['WSGIBridge']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
