"""vLLM's own OpenAI server on the embedded model, for engine tests of the service's OpenAI backend."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.scaleout.processes import Helper, free_port

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

    def __init__(self, workdir: Path, model: str, name: str, *extra: str) -> None:
        self.port = free_port()
        env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
        command = [
            # The server module rather than the `vllm` command, which looks for the distribution `vllm`
            # by name and fails under vllm-cpu.
            sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
            "--served-model-name", "judge", "--host", "127.0.0.1", "--port", str(self.port),
            "--dtype", "float32", "--enforce-eager", "--max-model-len", "4096",
            "--kv-cache-memory-bytes", str(1024**3), "--max-num-seqs", "8", *extra,
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
