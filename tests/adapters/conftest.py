"""Adapters are tested against the real trainer packages and a real service process (fake judge)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.api.service_process import REPO, ServiceProcess


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
