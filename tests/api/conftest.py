from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings


def make_client(tmp_path: Path, backend: FakeBackend, **settings: Any) -> TestClient:
    config = Settings(backend="fake", home_dir=tmp_path, **settings)
    return TestClient(create_app(config, backend=backend))


def wait_ready(client: TestClient, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while client.get("/readyz").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError("service never became ready")
        time.sleep(0.01)


@pytest.fixture
def fake_backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def client(tmp_path: Path, fake_backend: FakeBackend) -> Iterator[TestClient]:
    with make_client(tmp_path, fake_backend) as c:
        wait_ready(c)
        yield c


def group(n: int = 4, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How do I share the report with the client?"}],
        "reference": "Open the report, click Share and pick the client.",
        "answers": [{"id": f"a{i}", "text": f"Answer {i}: click Share."} for i in range(n)],
        **extra,
    }
