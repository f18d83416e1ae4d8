"""What the deploy tests share: the deploy folder, the validators' commands, and the metric names a
PromQL expression uses."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
VENV_BIN = Path(sys.executable).parent

# Every metric the deploy files name comes from the service (judge_*), the router (vllm_router_*),
# vLLM (vllm:*) or Prometheus itself (up).
_METRIC = re.compile(r"\b(judge_[a-z_]+|vllm_router_[a-z_]+|vllm:[a-z_]+|up)\b(?!\s*[=~!])")


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression (label names and functions left out)."""
    without_matchers = re.sub(r"\{[^}]*\}", "", expr)
    without_grouping = re.sub(
        r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", without_matchers
    )
    return set(_METRIC.findall(without_grouping))


def tool(name: str) -> str:
    """A validator's command: from the virtual environment, else from the system (scripts/install.sh puts
    each there); never missing."""
    found = VENV_BIN / name if (VENV_BIN / name).exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run scripts/install.sh (make install)")
    return str(found)


def run(*command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def exported_names(exposition: str) -> set[str]:
    """Metric names in Prometheus exposition text."""
    return {line.split("{")[0].split(" ")[0] for line in exposition.splitlines() if line and line[0] != "#"}
