"""The graders written as code that benchmarks/code_graders.py serves (JUDGE_CODE_GRADERS targets)."""

from __future__ import annotations

import time
from typing import Any


def trivial(sample: dict[str, Any], item: dict[str, Any]) -> float:
    """As cheap as a grader gets: what remains is the pool's own cost."""
    return 1.0 if sample["output_text"] else 0.0


def hangs_when_asked(sample: dict[str, Any], item: dict[str, Any]) -> float:
    """Hangs (until the call's timeout kills its worker) on the answer whose text the item names."""
    if item.get("hang") == sample["output_text"]:
        time.sleep(3600)
    return 1.0
