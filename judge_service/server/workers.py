"""JUDGE_WORKERS processes on one listening socket.

The supervisor binds the socket and starts each worker as `judge-service serve` with the socket's
descriptor inherited, so every worker is the ordinary single-process server (draining.py). Signals are
passed on to the workers, which drain; a worker that exits on its own (its engine died, a crash) makes the
supervisor stop the others and exit non-zero, for the orchestrator to restart the replica. A supervisor
killed outright cannot pass anything on: its workers notice it is gone and stop (parent_watch.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from types import FrameType

from judge_service.config import Settings
from judge_service.server.parent_watch import SUPERVISOR_PID_ENV

log = logging.getLogger(__name__)

LISTEN_FD_ARG = "--listen-fd"


def serve_workers(settings: Settings) -> int:
    """JUDGE_WORKERS worker processes on one socket, metrics added up over all of them (metrics.py)."""
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or tempfile.mkdtemp(prefix="judge-metrics-")
    shutil.rmtree(metrics_dir, ignore_errors=True)  # values of an earlier run must not be added in
    os.makedirs(metrics_dir)
    listener = _bind(settings)
    # Workers stop once this process is gone (parent_watch.py), even if it dies before they watch.
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": metrics_dir, SUPERVISOR_PID_ENV: str(os.getpid())}
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
