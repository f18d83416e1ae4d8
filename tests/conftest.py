"""Fixtures every test folder may use: a real PostgreSQL server (tests/postgres_server.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.postgres_server import fresh_database, server_url


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
