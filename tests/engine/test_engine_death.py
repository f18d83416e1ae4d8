"""Readiness on the real engine: kill the vLLM EngineCore process under a running service. /readyz must
answer 503 `failed` within seconds, judge_engine_ready drop to 0, a group in flight get an error (not
hang), and the process exit non-zero so that a supervisor restarts it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.api.service_process import metric_value
from tests.engine.conftest import _port_from_log, _wait_ready

pytestmark = pytest.mark.engine

GROUP = {
    "conversation": [{"role": "user", "content": "What is the capital of France?"}],
    "reference": "Paris.",
    "answers": [{"id": f"a{i}", "text": f"It is Paris, answer {i}."} for i in range(4)],
}


def _engine_core(pid: int) -> psutil.Process:
    for child in psutil.Process(pid).children(recursive=True):
        title = " ".join(child.cmdline()) + " " + child.name()
        if "EngineCore" in title:
            return child
    raise LookupError(f"no EngineCore process under {pid}")


def test_killing_the_engine_fails_readiness_and_exits_non_zero(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "JUDGE_PORT": "0",  # the OS picks; read back from the log
        "JUDGE_DB_PATH": str(tmp_path / "judgements.sqlite3"),
        "JUDGE_HEALTH_INTERVAL_S": "0.5",
        "JUDGE_DEAD_ENGINE_EXIT_S": "3",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),
    }
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "judge_service", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        port = _port_from_log(server, log_path)
    except BaseException:
        server.kill()
        raise
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
    try:
        _wait_ready(client, server, log_path)
        assert metric_value(client.get("/metrics").text, "judge_engine_ready") == 1
        in_flight: list[httpx.Response] = []
        sender = threading.Thread(target=lambda: in_flight.append(client.post("/v1/judge", json=GROUP)))
        sender.start()
        time.sleep(1.0)  # the group is in the engine (one takes many seconds on this CPU)

        _engine_core(server.pid).kill()
        killed = time.monotonic()
        seen: dict[str, object] = {}
        while time.monotonic() - killed < 10:
            ready = client.get("/readyz")
            if ready.status_code == 503:
                seen = ready.json()
                seen["engine_ready"] = metric_value(client.get("/metrics").text, "judge_engine_ready")
                break
            time.sleep(0.1)
        assert seen.get("status") == "failed", (seen, log_path.read_text(errors="replace")[-3000:])
        assert seen["backend"] == "vllm" and "engine died" in str(seen["error"])
        assert seen["engine_ready"] == 0

        sender.join(timeout=60)
        assert in_flight and in_flight[0].status_code in (502, 503), in_flight
        assert server.wait(timeout=90) == 1
    finally:
        client.close()
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
