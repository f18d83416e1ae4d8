"""Fixtures every test folder may use: a real PostgreSQL server (tests/postgres_server.py); and the check
that the session leaves no process behind (tests/leftovers.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests import leftovers
from tests.postgres_server import fresh_database, server_url

_SESSION_MARK = leftovers.mark_session()  # at import: before any fixture or test starts a process


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a process the tests started is still alive (tests/leftovers.py)."""
    left = leftovers.leftovers(_SESSION_MARK)
    if not left:
        return
    lines = "\n".join(f"  pid {pid}: {command[:200]}" for pid, command in sorted(left.items()))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = f"processes the tests started are still running (kill process groups, not leaders):\n{lines}"
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server that answers: the configured one, else a throwaway cluster."""
    url, cluster = server_url()
    yield url
    if cluster is not None:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database of this test's own."""
    with fresh_database(postgres_server) as url:
        yield url


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback URL whose connections are refused for the whole test: the port stays bound by this
    fixture and never listens, so no other process can take it meanwhile (unlike a port assumed free)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}"
