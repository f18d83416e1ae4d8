"""Readiness on the real engine: kill the vLLM EngineCore process under a running service. /readyz must
answer 503 `failed` within seconds, judge_engine_ready drop to 0, a group in flight get an error (not
hang), and the process exit non-zero so that a supervisor restarts it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.engine.conftest import ENGINE_START_TIMEOUT_S, engine_service
from tests.service_process import metric_value

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
    service = engine_service(tmp_path, health_interval_s=0.5, dead_engine_exit_s=3)
    service.start(timeout_s=ENGINE_START_TIMEOUT_S)
    client = httpx.Client(base_url=service.url, timeout=120)
    try:
        assert metric_value(client.get("/metrics").text, "judge_engine_ready") == 1
        in_flight: list[httpx.Response] = []
        sender = threading.Thread(target=lambda: in_flight.append(client.post("/v1/judge", json=GROUP)))
        sender.start()
        time.sleep(1.0)  # the group is in the engine (one takes many seconds on this CPU)

        _engine_core(service.pid).kill()
        killed = time.monotonic()
        seen: dict[str, object] = {}
        while time.monotonic() - killed < 10:
            ready = client.get("/readyz")
            if ready.status_code == 503:
                seen = ready.json()
                seen["engine_ready"] = metric_value(client.get("/metrics").text, "judge_engine_ready")
                break
            time.sleep(0.1)
        assert seen.get("status") == "failed", (seen, service.log()[-3000:])
        assert seen["backend"] == "vllm" and "error" not in seen  # why: in the log, and for a read key
        assert seen["engine_ready"] == 0

        sender.join(timeout=60)
        assert in_flight and in_flight[0].status_code in (502, 503), in_flight
        assert service.wait(timeout_s=90) == 1
        assert "engine died" in service.log()
    finally:
        client.close()
        service.stop()
