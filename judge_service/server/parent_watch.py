"""A worker stops when its supervisor is gone.

A worker (`judge-service serve --listen-fd N`, server/workers.py) serves on a socket its supervisor
bound. When the supervisor is killed outright (SIGKILL, the OOM killer), nothing tells the worker: it
would go on answering on the port of a replica its orchestrator believes dead, parented to PID 1. So the
worker watches its parent: once its parent process id changes (the kernel reparents an orphan), it stops
as on SIGTERM, draining what it holds. Polling the parent id is portable and costs nothing; a stop within
a second is soon enough.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

POLL_S = 0.5


SUPERVISOR_PID_ENV = "JUDGE_SUPERVISOR_PID"  # set by the supervisor for its workers (server/workers.py)


def watch_parent(on_orphaned: Callable[[], None], *, poll_s: float = POLL_S) -> threading.Thread:
    """Call `on_orphaned` once, from a daemon thread, when this process's parent is not its supervisor
    (JUDGE_SUPERVISOR_PID, else the parent it has now): also when the supervisor died before the watch
    began."""
    parent = int(os.environ.get(SUPERVISOR_PID_ENV) or os.getppid())

    def watch() -> None:
        pause = threading.Event()
        while os.getppid() == parent:
            pause.wait(poll_s)
        log.error("the supervisor (pid %d) is gone; this worker stops", parent)
        on_orphaned()

    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread
