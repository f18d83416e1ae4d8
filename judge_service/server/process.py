"""The service as a child process: `python -m judge_service serve` with its settings as JUDGE_* variables,
started on a port the OS picks (read back from uvicorn's log, so no race for a free port) and waited for
until `/readyz` says ready. For tests, benchmarks, and scripts that want a local judge beside a trainer.

The child leads a process group of its own (the in-process engine and worker processes are in it), so
`stop()` and `terminate()` leave nothing running.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

_RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


class ServiceProcess:
    """`settings` are Settings fields (JUDGE_<NAME> each); `env` adds other variables (OMP_NUM_THREADS).
    JUDGE_* variables of this process are inherited only with `inherit_settings` (a benchmark run with the
    operator's JUDGE_MODEL); otherwise the child has exactly the settings given. The log goes to `log_path`,
    else to service-<start>.log in `workdir`."""

    def __init__(
        self,
        workdir: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        inherit_settings: bool = False,
        log_path: Path | None = None,
        **settings: Any,
    ) -> None:
        self.workdir = workdir
        self.settings = {"host": "127.0.0.1", **settings}
        self.extra_env = dict(env or {})
        self.cwd = cwd
        self.inherit_settings = inherit_settings
        self.fixed_log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log_path = workdir / "service.log"
        self._starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("not started")
        return self.proc.pid

    def start(self, timeout_s: float = 30.0) -> ServiceProcess:
        """Start and wait until ready; on failure, the child is stopped and the error holds its log."""
        env = {k: v for k, v in os.environ.items() if self.inherit_settings or not k.startswith("JUDGE_")}
        env.update(self.extra_env)
        env.update({f"JUDGE_{k.upper()}": str(v) for k, v in self.settings.items()})
        env["JUDGE_PORT"] = "0"
        self._starts += 1
        self.log_path = self.fixed_log_path or self.workdir / f"service-{self._starts}.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "judge_service", "serve"],
                cwd=self.cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready(time.monotonic() + timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, deadline: float) -> None:
        self.port = 0  # this start's port, read once from this start's log
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the service exited with {self.proc.returncode}:\n{self.tail()}")
            if not self.port and (found := _RUNNING.search(self.log())):
                self.port = int(found.group(1))
            if self.port and self._ready():
                return
            time.sleep(0.2 if self.port else 0.05)
        raise TimeoutError(f"the service did not become ready:\n{self.tail()}")

    def _ready(self) -> bool:
        try:
            response = httpx.get(f"{self.url}/readyz", timeout=5)
        except httpx.HTTPError:
            return False
        if response.status_code != 200 and response.json().get("status") == "failed":
            raise RuntimeError(f"the judge backend failed to start: {response.text}\n{self.tail()}")
        return response.status_code == 200

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the service itself (not its group): what an orchestrator's stop does."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout_s: float) -> int:
        if self.proc is None:
            raise RuntimeError("not started")
        return self.proc.wait(timeout=timeout_s)

    def rss_kib(self) -> int | None:
        """Resident memory of the service (Linux), or None where /proc is not available."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        return int(found.group(1)) if found else None

    def terminate(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM (the service drains), then its whole group is killed; the exit code, None if killed."""
        if self.proc is None:
            return None
        self.signal(signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        self.stop()
        return code

    def stop(self) -> None:
        """SIGKILL to the service's process group (engine and workers included); always reaps it."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def __enter__(self) -> ServiceProcess:
        return self.start() if self.proc is None else self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.terminate()
