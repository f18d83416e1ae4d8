"""Helper processes of the scale-out tests (fake engines, vllm-router), each stopped by `stop()`."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.service_process import REPO

_RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


class Helper:
    def __init__(self, command: list[str], log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, url: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.proc.args} exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{url} did not answer:\n{self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


class FakeEngine(Helper):
    def __init__(
        self,
        workdir: Path,
        name: str,
        latency_s: float = 0.02,
        model: str = "fake-judge",
        policy: bool = False,
    ) -> None:
        command = [
            sys.executable,
            "-m",
            "tests.scaleout.fake_engine",
            "--name",
            name,
            "--latency",
            str(latency_s),
            "--model",
            model,
            *(["--policy"] if policy else []),
        ]
        super().__init__(command, workdir / f"engine-{name}.log")
        deadline = time.monotonic() + 30
        while not (found := _RUNNING.search(self.log())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fake engine {name} did not start:\n{self.log()}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{found.group(1)}"
        self.wait_for(f"{self.url}/health")

    def stats(self) -> dict[str, object]:
        return dict(httpx.get(f"{self.url}/stats", timeout=5).json())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Router(Helper):
    """The real vllm-router (PyPI) in front of `workers`. Its ports are chosen here, so a start that lost
    a port to another process is tried again on new ones."""

    def __init__(self, workdir: Path, workers: list[str], policy: str, *extra: str) -> None:
        for attempt in range(3):
            self.port, self.metrics_port = free_port(), free_port()
            command = [
                str(Path(sys.executable).parent / "vllm-router"),
                "--host", "127.0.0.1", "--port", str(self.port),
                "--prometheus-host", "127.0.0.1", "--prometheus-port", str(self.metrics_port),
                "--policy", policy,
                "--worker-urls", *workers,
                *extra,
            ]  # fmt: skip
            super().__init__(command, workdir / f"router-{attempt}.log")
            self.url = f"http://127.0.0.1:{self.port}"
            try:
                self.wait_for(f"{self.url}/health")
                return
            except RuntimeError:
                if "in use" not in self.log():
                    raise
        raise RuntimeError(f"vllm-router found no free port:\n{self.log()}")

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text
