"""Starts the real service (`python -m judge_service serve`) on the embedded default model, once."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.server.process import ServiceProcess

ENGINE_START_TIMEOUT_S = 900  # first run prepares the model (~25 s) and loads the engine (~50 s)
REPO = Path(__file__).resolve().parents[2]


def engine_service(workdir: Path, **settings: Any) -> ServiceProcess:
    """The service on the embedded default judge (the in-process vLLM engine), its database in `workdir`.
    The prepared model stays in the user's home (JUDGE_HOME_DIR is not set), shared by every test run."""
    home = os.environ.get("JUDGE_HOME_DIR")
    home_setting = {"home_dir": home} if home else {}
    return ServiceProcess(
        workdir,
        cwd=REPO,
        env={"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")},
        db_path=str(workdir / "judgements.sqlite3"),
        **home_setting,
        **settings,
    )


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    # The support grader of docs/graders/code.md (examples/support_grader.py), for
    # test_code_graders_engine.py.
    code_graders = '[{"name": "support_facts", "target": "examples.support_grader:grade", "timeout_s": 5}]'
    with engine_client(tmp_path_factory.mktemp("engine"), code_graders=code_graders) as client:
        yield client


@contextlib.contextmanager
def engine_client(workdir: Path, **settings: Any) -> Iterator[httpx.Client]:
    """The service on the embedded judge (engine_service), started, and a client for it; stopped after."""
    service = engine_service(workdir, **settings)
    try:
        service.start(timeout_s=ENGINE_START_TIMEOUT_S)
        with httpx.Client(base_url=service.url, timeout=600) as client:
            yield client
    finally:
        service.terminate()
