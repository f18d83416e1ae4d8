"""No test leaves a process behind: every process the test session starts inherits a mark (an environment
variable naming this session), and when the session ends, any process still alive that carries the mark
fails the run, named with its command line.

The mark travels through the environment, so a process started with an environment of its own (a
trainer's virtual environment given a minimal one) is not seen; the service, its workers, its engine and
the browser are. Processes get a few seconds to finish exiting (a group just killed is still being torn
down).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

MARK = "PYTEST_JUDGE_SERVICE_SESSION"  # not JUDGE_*: the service's process helper drops those
GRACE_S = 10.0


def mark_session() -> str:
    """Give this session its mark (inherited by everything it starts from here on)."""
    os.environ[MARK] = uuid.uuid4().hex
    return os.environ[MARK]


def marked_processes(mark: str) -> dict[int, str]:
    """pid -> command line of the live processes, other than this one, that carry `mark`."""
    needle = f"{MARK}={mark}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        found[int(entry.name)] = command.strip()
    return found


def leftovers(mark: str, grace_s: float = GRACE_S) -> dict[int, str]:
    """The marked processes still alive after `grace_s` seconds."""
    deadline = time.monotonic() + grace_s
    while (found := marked_processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found
