"""A real PostgreSQL for the tests, never a skip.

The server is JUDGE_TEST_DATABASE_URL (default: the one this kind of machine runs at 127.0.0.1:5432 with
trust authentication). Where nothing answers there, a throwaway cluster is started from the PostgreSQL
binaries in a temporary folder, on a free port, as the `postgres` user when the tests run as root
(PostgreSQL refuses to run as root); the binaries are installed from Debian's packages when missing.
Each test gets a database of its own (`fresh_database`), dropped afterwards.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


def _binaries() -> Path:
    found = shutil.which("initdb")
    if found is None:
        candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not candidates:
            subprocess.run(["apt-get", "install", "-y", "-q", "postgresql"], check=True)
            candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        found = candidates[-1]
    return Path(found).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayCluster:
    """initdb + pg_ctl in a temporary folder; `stop()` removes it."""

    def __init__(self) -> None:
        self.bin = _binaries()
        self.dir = Path(tempfile.mkdtemp(prefix="judge-pg-"))
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres")
        self.start()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as, str(self.bin / tool), *args], check=True, capture_output=True)

    def _pg_ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), *args)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir}"
        self._pg_ctl("-l", str(self.dir / "log"), "-o", options, "-w", "start")

    def crash(self) -> None:
        """Stop at once, as a crash would (immediate mode: no checkpoint, clients cut off)."""
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        try:
            self.crash()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def server_url() -> tuple[str, ThrowawayCluster | None]:
    """A URL of a server that answers, and the cluster started for it (None: one was running)."""
    url = os.environ.get("JUDGE_TEST_DATABASE_URL", DEFAULT_URL)
    if _answers(url):
        return url, None
    cluster = ThrowawayCluster()
    return cluster.url, cluster


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextmanager
def fresh_database(server: str) -> Iterator[str]:
    """A new, empty database on `server`, dropped (with its connections) afterwards."""
    name = f"judge_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_migrate(database_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`judge-service migrate` against `database_url`, as a deployment's migration job runs it."""
    full_env = {**os.environ, "JUDGE_DATABASE_URL": database_url, **env}
    command = [sys.executable, "-m", "judge_service", "migrate"]
    return subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=60)
