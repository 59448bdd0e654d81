"""A WSGI app served by uvicorn on a thread of this process (the all-in-one's HTTP APIs).

uvicorn installs no signal handlers off the main thread, so the process's own
handlers decide when to stop; :meth:`ThreadedServer.stop` asks the server to
finish its requests and joins its thread. Port 0 picks a free port
(:attr:`ThreadedServer.port` says which, once started).
"""

from __future__ import annotations

import threading
import time
from typing import Any

# [api_server] max_body_bytes's default: the APIs' own limit unless the caller says.
DEFAULT_MAX_BODY_BYTES = 1_048_576


class ServerError(RuntimeError):
    """The server could not start (the message says where it tried to listen)."""


class ThreadedServer:
    def __init__(self, name: str, wsgi_app: Any, host: str, port: int,
                 threads: int = 16, log_level: str = "warning",
                 streams_bodies: bool = False,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        """``streams_bodies``: the app reads large bodies in pieces (image data), so a
        client going away mid-body must show as an error, not as the body's end; every
        other app is given its whole body, read up to ``max_body_bytes`` (the app's own
        limit: a larger body reaches it with a Content-Length over that limit, which it
        answers with 413), with one thread hop per request (``WSGIBridge``)."""
        import uvicorn

        from stratus.web.server import UVICORN_OPTIONS

        self.name, self.host, self.port = name, host, port
        self._executor: Any
        app: Any
        if streams_bodies:
            from a2wsgi import WSGIMiddleware

            from stratus.web.bodies import guard_disconnects
            from stratus.web.disconnect import tolerate_disconnects

            streamed = WSGIMiddleware(tolerate_disconnects(wsgi_app),  # type: ignore[arg-type]
                                      workers=threads)
            app, self._executor = guard_disconnects(streamed), streamed.executor
        else:
            from stratus.web.wsgi_bridge import WSGIBridge

            bridge = WSGIBridge(wsgi_app, threads=threads, max_body_bytes=max_body_bytes)
            app, self._executor = bridge, bridge.executor
        config = uvicorn.Config(app, host=host, **UVICORN_OPTIONS,
                                port=port, log_level=log_level,
                                access_log=log_level == "debug", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"http-{name}", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._server.run()
        except BaseException as exc:  # uvicorn exits (SystemExit) when it cannot bind
            self._error = exc

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ServerError(f"{self.name}: cannot listen on {self.host}:{self.port}"
                                  + (f" ({self._error})" if self._error else ""))
            time.sleep(0.02)
        for server in getattr(self._server, "servers", []):
            for sock in server.sockets:
                self.port = int(sock.getsockname()[1])
                return

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self, timeout: float = 15.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        # The request threads: uvicorn has finished its requests, so they are idle.
        self._executor.shutdown(wait=True)
