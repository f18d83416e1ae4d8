"""A wheel built from the repository serves and judges from any directory: the prompt templates ship
inside it as package data. The wheel is installed into a folder of its own and put first on the path,
so the project's installed dependencies are reused but not its editable checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.service_process import REPO, group

_NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "__pycache__",
    "*.egg-info",
    "build",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "data",
)


def test_the_wheel_serves_and_judges_from_another_directory(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: building writes build/ and egg-info next to the sources
    shutil.copytree(REPO, source, ignore=_NOT_SOURCES, symlinks=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", source], check=True
    )
    (wheel,) = (tmp_path / "dist").glob("judge_service-*.whl")
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env |= {
        "PYTHONPATH": str(site),
        "JUDGE_BACKEND": "fake",
        "JUDGE_HOME_DIR": str(elsewhere),
        "JUDGE_PORT": "0",
    }
    where = subprocess.run(
        [sys.executable, "-c", "import judge_service.config as c; print(c.PACKAGED_PROMPTS)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(site), where  # the wheel's copy, not the checkout
    assert (Path(where) / "judge_group" / "system.j2").is_file()

    log = elsewhere / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [site / "bin" / "judge-service", "serve"],
            cwd=elsewhere,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        port = _port_from_log(log, server)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            _wait_ready(client)
            reply = client.post("/v1/judge", json=group(3))
            assert reply.status_code == 200, reply.text
            assert [a["status"] for a in reply.json()["answers"]] == ["scored"] * 3
            assert reply.json()["prompt_version"].startswith("judge_group@")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _port_from_log(log: Path, server: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        if server.poll() is not None:
            raise RuntimeError(f"judge-service exited with {server.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    raise TimeoutError(log.read_text())


def _wait_ready(client: httpx.Client) -> None:
    deadline = time.monotonic() + 30
    while client.get("/readyz").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError("never ready")
        time.sleep(0.05)
