"""The service as a real second process on loopback (`python -m judge_service serve`), for load tests.

Settings go in as JUDGE_* environment variables; the port is picked by the OS (port 0) and read back
from uvicorn's log. Every process started here is stopped by `stop()` (the fixtures call it).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

_RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
REPO = Path(__file__).resolve().parents[2]


class ServiceProcess:
    def __init__(self, workdir: Path, **settings: Any) -> None:
        self.workdir = workdir
        self.settings = {"backend": "fake", "home_dir": str(workdir), "host": "127.0.0.1", **settings}
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
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
        env.update({f"JUDGE_{k.upper()}": str(v) for k, v in self.settings.items()})
        env["JUDGE_PORT"] = "0"
        self._starts += 1
        self.log_path = self.workdir / f"service-{self._starts}.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "judge_service", "serve"],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited with {self.proc.returncode}:\n{self.log()}")
            found = _RUNNING.search(self.log())
            if found and self._ready(int(found.group(1))):
                self.port = int(found.group(1))
                return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"the service did not become ready:\n{self.log()}")

    def _ready(self, port: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, sig: signal.Signals) -> None:
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

    def stop(self) -> None:
        """SIGKILL if still running; always reaps the process."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(timeout=10)


def metric_value(text: str, name: str) -> float:
    """A sample without labels from Prometheus exposition text."""
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    if found is None:
        raise KeyError(name)
    return float(found.group(1))


def group(n: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How do I share the report?"}],
        "reference": "Click Share.",
        "answers": [{"id": f"a{i}", "text": f"Answer {i}"} for i in range(n)],
        **extra,
    }
