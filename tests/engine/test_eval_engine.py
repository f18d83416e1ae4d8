"""`judge-service eval` on the embedded judge: three GSM8K groups (an excerpt of the labelled public file,
in tests/data) through the real engine, the report complete whatever the small judge's marks are."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.unit.tools.test_eval_data import GSM8K

pytestmark = pytest.mark.engine
REPO = Path(__file__).resolve().parents[2]


def test_eval_runs_three_gsm8k_groups_on_the_embedded_judge(served: httpx.Client, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "judge_service",
            "eval",
            *("--url", str(served.base_url), "--data", str(GSM8K), "--format", "gsm8k-solutions"),
            *("--limit", "3", "--run-id", "engine-eval", "--out", str(out), "--no-progress"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    (configuration,) = report["configurations"]
    assert [item["group"] for item in configuration["items"]] == [0, 1, 2]
    answers = [a for item in configuration["items"] for a in item["answers"]]
    assert len(answers) == 12 and all(isinstance(a["label"], bool) for a in answers)
    assert all(a["score"] is None or 0.0 <= a["score"] <= 1.0 for a in answers)
    metrics = configuration["metrics"]
    assert metrics["unscored_share"]["value"] == sum(a["score"] is None for a in answers) / 12
    assert metrics["seconds_per_group"]["value"] > 0 and metrics["tokens_per_group"]["value"] > 0
    stored = served.get("/v1/runs/engine-eval/judgements").json()["items"]
    assert sorted(j["judgement_id"] for j in stored) == sorted(
        i["judgement_id"] for i in configuration["items"]
    )
    assert "| default | 3 |" in done.stdout
