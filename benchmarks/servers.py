"""The service served for a benchmark: in this process (uvicorn as a task), or as a child process
(judge_service/server/process.py); facts read about such processes; and fresh PostgreSQL databases."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from benchmarks import REPO_ROOT
from judge_service.server.process import ServiceProcess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def in_process_server(
    app: Any, *, lifespan: Literal["auto", "on", "off"] = "off"
) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on loopback as a task of the running loop; yields the base URL.
    lifespan "off": the caller already runs the app's lifespan (running_app)."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan, access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises the startup error
            raise RuntimeError("uvicorn exited before starting")
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@contextlib.contextmanager
def server_process(
    env: dict[str, str], log_path: Path, start_timeout_s: float = 900.0
) -> Iterator[tuple[str, ServiceProcess]]:
    """`python -m judge_service serve` as a child process, with JUDGE_* `env` over the operator's own
    JUDGE_* settings, on a port the OS picks; yields (base URL, process) once ready. Stopped (SIGTERM,
    then its process group killed) on exit."""
    settings = {k.removeprefix("JUDGE_").lower(): v for k, v in env.items() if k.startswith("JUDGE_")}
    others = {k: v for k, v in env.items() if not k.startswith("JUDGE_")}
    service = ServiceProcess(
        log_path.parent, env=others, cwd=REPO_ROOT, inherit_settings=True, log_path=log_path, **settings
    )
    with service.start(timeout_s=start_timeout_s):
        yield service.url, service


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def server_pids(pid: int) -> list[int]:
    """A server process and its children (uvicorn's workers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(c) for c in children.read_text().split()] if children.exists() else []
    return [pid, *found]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of processes, those gone counted as nothing."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += process_cpu_seconds(pid)
    return total


POSTGRES = os.environ.get("JUDGE_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextlib.contextmanager
def fresh_database(server: str = POSTGRES) -> Iterator[str]:
    """A new database on the PostgreSQL server (JUDGE_BENCH_DATABASE_URL, or `server`); yields its URL;
    dropped afterwards."""
    import psycopg

    name = f"judge_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


@contextlib.contextmanager
def env_override(**values: str) -> Iterator[None]:
    """Set environment variables for the duration (processes spawned meanwhile inherit them)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"bench-{prefix}-") as tmp:
        yield Path(tmp)


@contextlib.asynccontextmanager
async def temporary_folder(run: Any) -> AsyncIterator[Path]:
    """An experiment's set-up that is only a temporary folder (run.state)."""
    with workdir(run.experiment.name) as tmp:
        yield tmp
