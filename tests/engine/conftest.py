"""Starts the real service (`python -m judge_service serve`) on the embedded default model, once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ENGINE_START_TIMEOUT_S = 900  # first run prepares the model (~25 s) and loads the engine (~50 s)


_RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    workdir = tmp_path_factory.mktemp("engine")
    log_path = workdir / "server.log"
    env = {
        **os.environ,
        "JUDGE_PORT": "0",  # the OS picks a free port, read back from the log: no race for it
        "JUDGE_DB_PATH": str(workdir / "judgements.sqlite3"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),
    }
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "judge_service", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        port = _port_from_log(server, log_path)
    except BaseException:
        server.kill()
        raise
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600)
    try:
        _wait_ready(client, server, log_path)
        yield client
    finally:
        client.close()
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def _port_from_log(server: subprocess.Popen[bytes], log_path: Path) -> int:
    started = time.monotonic()
    while time.monotonic() - started < ENGINE_START_TIMEOUT_S:
        found = _RUNNING.search(log_path.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        if server.poll() is not None:
            raise RuntimeError(f"the service exited ({server.returncode}):\n{_tail(log_path)}")
        time.sleep(0.5)
    raise TimeoutError(f"the service never listened:\n{_tail(log_path)}")


def _wait_ready(client: httpx.Client, server: subprocess.Popen[bytes], log_path: Path) -> None:
    started = time.monotonic()
    while time.monotonic() - started < ENGINE_START_TIMEOUT_S:
        if server.poll() is not None:
            raise RuntimeError(f"the service exited ({server.returncode}):\n{_tail(log_path)}")
        try:
            ready = client.get("/readyz")
            if ready.status_code == 200:
                return
            if ready.json().get("status") == "failed":
                raise RuntimeError(f"the engine failed to start: {ready.json()}\n{_tail(log_path)}")
        except httpx.TransportError:
            pass
        time.sleep(1)
    raise TimeoutError(f"the engine was not ready after {ENGINE_START_TIMEOUT_S} s:\n{_tail(log_path)}")


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
