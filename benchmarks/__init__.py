"""Benchmarks of the judge service: each compares configurations side by side in one run (the machines
are shared and noisy, so only ratios measured together mean anything), writes benchmarks/out/<name>.json
and prints a markdown table. Each is an experiment declared once and run by the harness, experiment.py
(`python -m benchmarks NAME`, `--list`). Shared pieces, one concern each: report.py (machine facts,
percentiles, result files), groups.py (deterministic judge groups), engine.py (the judge in-process),
load.py (load generation), servers.py (the service served in-process or as a child process), rawhttp.py
(a lean HTTP/1.1 client), trees.py (an earlier commit's tree)."""

import os
from pathlib import Path

# The engine is fastest with two OpenMP threads on the small CPU machines (see DESIGN.md); set before
# torch/vLLM are imported anywhere (spawned engine processes import this package again).
os.environ.setdefault("OMP_NUM_THREADS", "2")
# vLLM logs every step at INFO on stdout; keep stdout for the result tables (override to debug).
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
OUT_DIR = BENCH_DIR / "out"
