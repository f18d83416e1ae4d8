"""Running the app under uvicorn in one process, shutting down by draining first.

Shutdown (SIGTERM or SIGINT): uvicorn's own handling closes the listening socket at once, so a request
arriving during the shutdown gets a refused connection and `/readyz` cannot say `draining`. Here the
first signal starts the app's drain instead (`app.state.shut_down`: waiting members answered 503, new
requests 503 `shutting_down` with Retry-After, `/readyz` 503 `draining`) with the listener still open;
once the requests in flight have finished, or JUDGE_DRAIN_TIMEOUT_S has passed, the server stops as
uvicorn does. A second signal stops it without waiting.

DrainingServer overrides uvicorn internals (`handle_exit`, `on_tick`, `_captured_signals`), which is why
pyproject.toml bounds uvicorn's version; tests/api/test_durability.py fails if they change.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import os
import signal
import socket
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

import uvicorn

from judge_service.app import create_app
from judge_service.config import Settings
from judge_service.redaction import protect_logs
from judge_service.server.connections import with_deadlines
from judge_service.server.parent_watch import watch_parent

log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    """uvicorn's server, whose first stop signal drains the app before the listener closes."""

    def __init__(
        self, config: uvicorn.Config, shut_down: Callable[[], Callable[[], Coroutine[Any, Any, None]] | None]
    ) -> None:
        super().__init__(config)
        self._shut_down = shut_down  # the app's drain, once its lifespan has started
        self._stop_asked = False
        self._draining: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._stop_asked or self.should_exit:
            super().handle_exit(sig, frame)  # a second signal: stop now
            return
        self._captured_signals.append(sig)  # uvicorn re-raises it once stopped, as it does itself
        self._stop_asked = True

    async def on_tick(self, counter: int) -> bool:
        if self._stop_asked and self._draining is None:
            drain = self._shut_down()
            if drain is None:  # the app has not started: nothing to drain
                self.should_exit = True
            else:
                log.info("stop asked: draining with the listener open")
                self._draining = asyncio.create_task(drain())
        if self._draining is not None and self._draining.done():
            self.should_exit = True
        return await super().on_tick(counter)


def serve(settings: Settings, listen_fd: int | None = None) -> int:
    """Run one server process until it stops; 1 when it stopped because the judge backend failed."""
    server: DrainingServer | None = None

    def stop() -> None:  # the in-process engine died (backends/readiness.py): stop as on SIGTERM
        if server is not None:
            server.should_exit = True

    app = create_app(settings, on_fatal=stop)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=False,  # the service writes its own, naming the key (api/middleware/request_metrics.py)
        # After the drain, connections still open (idle keep-alives) get this long to close.
        timeout_graceful_shutdown=max(1, math.ceil(settings.drain_timeout_s)),
        # Slow or silent clients: deadlines for headers and bodies (the protocol), and for idle keep-alives.
        http=with_deadlines(settings.header_timeout_s, settings.body_timeout_s),
        timeout_keep_alive=settings.keep_alive_s,
    )
    protect_logs()  # uvicorn's handlers, which building its Config has just set up
    server = DrainingServer(config, lambda: getattr(app.state, "shut_down", None))
    _tune_garbage_collector()
    sockets = None
    if listen_fd is not None:  # a worker: the supervisor's socket, and no serving on once it is gone
        sockets = [socket.socket(fileno=listen_fd)]
        watch_parent(lambda: os.kill(os.getpid(), signal.SIGTERM))
    server.run(sockets=sockets)
    failed = app.state.readiness.state == "failed" if hasattr(app.state, "readiness") else False
    return 1 if failed else 0


def _tune_garbage_collector() -> None:
    """Fewer and cheaper collections. A group allocates thousands of short-lived objects, so at the
    default threshold (700) the collector ran several times per group; freezing takes what lives as
    long as the process (modules, the app) out of every later scan. About 15% less server CPU per
    group in benchmarks/fake_capacity.py; reference cycles are rare here, so memory is unaffected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
