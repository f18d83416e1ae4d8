"""The judge fleet for real on the embedded model: the service's OpenAI backend through vllm-router over
two `vllm serve` engines. Groups spread over both engines; one engine killed, the groups keep succeeding
through the other."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.scaleout.processes import Helper, Router, free_port
from tests.service_process import ServiceProcess

pytestmark = pytest.mark.engine

START_TIMEOUT_S = 600


def prepared_model() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "judge_service", "prepare-model"], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


class VllmServe(Helper):
    """vLLM's OpenAI server (`vllm serve`) on one core with a small KV cache, in a process group of its
    own (its EngineCore is a child process: killing the group kills the engine as a crash would)."""

    def __init__(self, workdir: Path, model: str, name: str) -> None:
        self.port = free_port()
        env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
        command = [
            # The server module rather than the `vllm` command, which looks for the distribution `vllm`
            # by name and fails under vllm-cpu.
            sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
            "--served-model-name", "judge", "--host", "127.0.0.1", "--port", str(self.port),
            "--dtype", "float32", "--enforce-eager", "--max-model-len", "4096",
            "--kv-cache-memory-bytes", str(1024**3), "--max-num-seqs", "8",
        ]  # fmt: skip
        self.log_path = workdir / f"vllm-{name}.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.url = f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        self.kill()

    def requests_served(self) -> float:
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("vllm:request_success_total")
        )


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[VllmServe]]:
    workdir = tmp_path_factory.mktemp("fleet")
    model = prepared_model()
    started = [VllmServe(workdir, model, "a"), VllmServe(workdir, model, "b")]
    try:
        for engine in started:
            engine.wait_for(f"{engine.url}/health", timeout_s=START_TIMEOUT_S)
        yield started
    finally:
        for engine in started:
            engine.stop()


def group(i: int) -> dict[str, object]:
    return {
        "conversation": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "reference": f"{2 * i}",
        "answers": [{"id": "a", "text": f"{2 * i}"}, {"id": "b", "text": f"{2 * i + 1}"}],
        "run_id": "fleet",
    }


def test_groups_spread_over_two_engines_and_survive_one_dying(
    engines: list[VllmServe], tmp_path: Path
) -> None:
    router = Router(
        tmp_path, [e.url for e in engines], "consistent_hash", "--health-check-interval-secs", "2"
    )
    service = ServiceProcess(
        tmp_path,
        backend="openai",
        openai_base_url=f"{router.url}/v1",
        served_model_name="judge",
        reason_max_chars=16,
        openai_timeout_s=300,
    ).start(timeout_s=60)
    try:
        with httpx.Client(timeout=600) as client, ThreadPoolExecutor(4) as pool:
            first = list(pool.map(lambda i: client.post(f"{service.url}/v1/judge", json=group(i)), range(8)))
            assert [r.status_code for r in first] == [200] * 8, [
                r.text for r in first if r.status_code != 200
            ]
            served = [e.requests_served() for e in engines]
            assert all(n > 0 for n in served), f"one engine judged every group: {served}"
            engines[0].kill()
            started = time.monotonic()
            after = list(
                pool.map(lambda i: client.post(f"{service.url}/v1/judge", json=group(i)), range(8, 12))
            )
        assert [r.status_code for r in after] == [200] * 4, [r.text for r in after if r.status_code != 200]
        assert all(r.json()["status"] in ("ok", "partial") for r in after)
        assert engines[1].requests_served() >= served[1] + 4
        took = time.monotonic() - started
        print(f"\nengine calls before the kill: {served}; 4 groups after it in {took:.0f} s")
    finally:
        service.stop()
        router.stop()
