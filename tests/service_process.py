"""The service as a real second process for tests (judge_service/server/process.py), on the fake judge
unless a test names another backend, with its home in the test's folder; and small helpers for what such
tests read back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from judge_service.server import process

REPO = Path(__file__).resolve().parents[1]


class ServiceProcess(process.ServiceProcess):
    def __init__(self, workdir: Path, **settings: Any) -> None:
        super().__init__(workdir, cwd=REPO, **{"backend": "fake", "home_dir": str(workdir), **settings})


def metric_value(text: str, name: str, **labels: str) -> float:
    """A sample from Prometheus exposition text: the one without labels, or with exactly `labels` (in
    the order the metric declares them)."""
    selector = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
    found = re.search(rf"^{re.escape(name + selector)} (\S+)$", text, re.MULTILINE)
    if found is None:
        raise KeyError(name)
    return float(found.group(1))


def group(n: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How do I share the report?"}],
        "reference": "Click Share.",
        "answers": [{"id": f"a{i}", "text": f"Answer {i}"} for i in range(n)],
        **extra,
    }
