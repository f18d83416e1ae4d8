"""The benchmark harness (benchmarks/experiment.py): `python -m benchmarks --list` names every benchmark a
module of benchmarks/ declares, the README's table is the one `--list --write-readme` writes, and a small
real benchmark (the rule graders: no model, no server) runs end to end through the harness and writes its
result file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import BENCH_DIR
from benchmarks.__main__ import README, readme_table
from benchmarks.experiment import declared, experiments, modules
from benchmarks.instruction_guard import defaults_env

ROOT = BENCH_DIR.parent


def declaring_modules() -> list[str]:
    """The modules of benchmarks/ whose source declares EXPERIMENT or EXPERIMENTS."""
    found = re.compile(r"^EXPERIMENTS? = ", re.M)
    return sorted(p.stem for p in BENCH_DIR.glob("*.py") if found.search(p.read_text()))


def test_list_names_every_benchmark_a_module_declares() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--list"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    lines = dict(line.split(maxsplit=1) for line in listed.stdout.splitlines())
    assert declaring_modules() and set(declaring_modules()) <= set(modules())
    for module in declaring_modules():
        for experiment in declared(module):
            assert lines.get(experiment.called()), f"{module}: {experiment.called()} is not listed"
    assert "experiment" not in lines and "report" not in lines  # helpers are not benchmarks


def test_the_readme_table_is_the_one_list_writes() -> None:
    assert readme_table(experiments()) in README.read_text(), (
        "run: python -m benchmarks --list --write-readme"
    )


@pytest.mark.parametrize("name", ["decoding", "fair_shares", "fake_capacity"])
def test_help_shows_the_module_docstring_and_options(name: str) -> None:
    experiment = experiments()[name]
    text = experiment.parser().format_help()
    assert experiment.summary().split()[0] in text and "--out-dir" in text


def test_a_small_benchmark_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.rule_graders import CASES, EXPERIMENT, LENGTHS

    assert EXPERIMENT.main(["--seconds", "0.001", "--out-dir", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "rule_graders.json").read_text())
    assert result["benchmark"] == "rule_graders" and result["config"]["seconds"] == 0.001
    assert result["machine"]["cpu_count"] and result["machine"]["python"]
    assert [e["arm"] for e in result["entries"]] == list(CASES)
    assert all(e[length]["answers_per_s"] > 0 for e in result["entries"] for length in LENGTHS)
    assert result["worst_case"] and all(e["ms_per_answer"] >= 0 for e in result["worst_case"])
    printed = capsys.readouterr().out
    assert "| similarity |" in printed and "adversarial answer" in printed
    assert sum(line.startswith("|---") for line in printed.splitlines()) == 2  # the two tables


def test_the_instruction_guards_driver_judges_through_the_app() -> None:
    """asgi_driver.py, which instruction_guard runs under callgrind in each tree, judges its groups
    through the whole app (it raises on any answer but 200)."""
    done = subprocess.run(
        [sys.executable, str(BENCH_DIR / "asgi_driver.py"), "2", "3"],
        cwd=ROOT,
        env=defaults_env(ROOT),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"warmup": 2, "groups": 3, "in_flight": 8}


def test_the_gpu_sleep_script_says_why_the_cpu_engine_cannot_sleep(tmp_path: Path) -> None:
    """benchmarks/gpu_sleep.py is for a GPU; on this machine's CPU build of vLLM it measures nothing and
    says why, rather than failing or pretending."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "gpu_sleep", "--check-only"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "No measurement: vLLM's CpuPlatform has no sleep mode" in done.stdout
