"""Running the app under uvicorn: one process, or JUDGE_WORKERS processes on one listening socket, each
shutting down by draining first.

Shutdown (SIGTERM or SIGINT): uvicorn's own handling closes the listening socket at once, so a request
arriving during the shutdown gets a refused connection and `/readyz` cannot say `draining`. Here the
first signal starts the app's drain instead (`app.state.shut_down`: waiting members answered 503, new
requests 503 `shutting_down` with Retry-After, `/readyz` 503 `draining`) with the listener still open;
once the requests in flight have finished, or JUDGE_DRAIN_TIMEOUT_S has passed, the server stops as
uvicorn does. A second signal stops it without waiting.

Workers: the supervisor binds the socket and starts each worker as `judge-service serve` with the
socket's descriptor inherited, so every worker is the ordinary single-process server. Signals are passed
on to the workers, which drain; a worker that exits on its own (its engine died, a crash) makes the
supervisor stop the others and exit non-zero, for the orchestrator to restart the replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

import uvicorn

from judge_service.app import create_app
from judge_service.config import Settings

log = logging.getLogger(__name__)

LISTEN_FD_ARG = "--listen-fd"


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

    def stop() -> None:  # the in-process engine died (readiness.py): stop as on SIGTERM
        if server is not None:
            server.should_exit = True

    app = create_app(settings, on_fatal=stop)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=settings.access_log,
        # After the drain, connections still open (idle keep-alives) get this long to close.
        timeout_graceful_shutdown=max(1, math.ceil(settings.drain_timeout_s)),
    )
    server = DrainingServer(config, lambda: getattr(app.state, "shut_down", None))
    _tune_garbage_collector()
    sockets = None
    if listen_fd is not None:  # a worker: the supervisor's socket
        sockets = [socket.socket(fileno=listen_fd)]
    server.run(sockets=sockets)
    failed = app.state.readiness.state == "failed" if hasattr(app.state, "readiness") else False
    return 1 if failed else 0


def serve_workers(settings: Settings) -> int:
    """JUDGE_WORKERS worker processes on one socket, metrics added up over all of them (metrics.py)."""
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or tempfile.mkdtemp(prefix="judge-metrics-")
    shutil.rmtree(metrics_dir, ignore_errors=True)  # values of an earlier run must not be added in
    os.makedirs(metrics_dir)
    listener = _bind(settings)
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": metrics_dir}
    command = [sys.executable, "-m", "judge_service", "serve", LISTEN_FD_ARG, str(listener.fileno())]
    workers = [
        subprocess.Popen(command, env=env, pass_fds=(listener.fileno(),)) for _ in range(settings.workers)
    ]
    log.info("started %d workers: %s", len(workers), ", ".join(str(w.pid) for w in workers))
    stopping: list[int] = []

    def forward(sig: int, frame: FrameType | None) -> None:
        stopping.append(sig)
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                worker.send_signal(sig)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    try:
        while all(w.poll() is None for w in workers):
            time.sleep(0.2)
        if not stopping:  # a worker stopped on its own: stop the replica, for a restart of all of it
            log.error("a worker exited (%s); stopping the others", [w.returncode for w in workers])
            forward(signal.SIGTERM, None)
        for worker in workers:
            worker.wait()
    finally:
        listener.close()
    codes = [w.returncode for w in workers]
    return 0 if stopping and all(c in (0, -signal.SIGTERM, -signal.SIGINT) for c in codes) else 1


def _bind(settings: Settings) -> socket.socket:
    """The listening socket the workers share, announced as uvicorn announces its own."""
    listener = socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((settings.host, settings.port))
    listener.listen(2048)
    listener.set_inheritable(True)
    port = listener.getsockname()[1]
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", settings.host, port
    )
    return listener


def _tune_garbage_collector() -> None:
    """Fewer and cheaper collections. A group allocates thousands of short-lived objects, so at the
    default threshold (700) the collector ran several times per group; freezing takes what lives as
    long as the process (modules, the app) out of every later scan. About 15% less server CPU per
    group in benchmarks/fake_capacity.py; reference cycles are rare here, so memory is unaffected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
