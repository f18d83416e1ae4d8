"""Fixtures every test folder may use: a real PostgreSQL server (tests/postgres_server.py)."""

from __future__ import annotations

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
