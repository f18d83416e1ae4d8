"""Adapters are tested against the real trainer packages and a real service process (fake judge)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.service_process import REPO, ServiceProcess


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    process = ServiceProcess(tmp_path_factory.mktemp("judge")).start()
    try:
        yield process
    finally:
        process.stop()


def example(name: str) -> ModuleType:
    """An example script from examples/ as a module (they are scripts, not a package)."""
    path: Path = REPO / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trainer_python(env: str) -> str:
    """The Python of a trainer's own environment, built by scripts/trainer_envs.sh when missing or stale."""
    subprocess.run(["bash", str(REPO / "scripts" / "trainer_envs.sh"), env], check=True, timeout=1200)
    return str(REPO / f".venv-{env}" / "bin" / "python")


def run_in(env: str, script: str, *args: str) -> dict[str, Any]:
    """Run tests/adapters/<script> in a trainer's environment with this repository on the path; the JSON
    object it prints last."""
    done = subprocess.run(
        [trainer_python(env), str(REPO / "tests" / "adapters" / script), *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_with_dead_judge(env: str, script: str, url: str) -> dict[str, Any]:
    """run_in, with the service's URL and a port on which no judge answers as the script's arguments: the
    port is bound and never listening, so connections to it are refused for as long as the script runs."""
    with socket.socket() as refusing:
        refusing.bind(("127.0.0.1", 0))
        return run_in(env, script, url, str(refusing.getsockname()[1]))
