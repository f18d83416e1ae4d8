"""A jury on the embedded judge, measured with the evaluation tool: the judge alone, a full jury of three,
and the same jury escalating (the third judge only where the first two disagree), interleaved on the same
labelled groups, with the jury's own metrics read from the service afterwards.

The jury: `own`, the service's in-process engine; `strict`, vLLM's own OpenAI server
(`vllm.entrypoints.openai.api_server`, started here) on the same model with another prompt (a stricter
rule on wrong figures, the criteria listed in reverse order); `served`, the same server with the service's
prompt. The first two differ in engine and prompt, so they disagree where the prompt moves a mark; the
third settles those groups. All judge at temperature 0: on vLLM's CPU build a seeded request at a
temperature above 0 stops its engine ("CPU Generator does not use offset"), so sampling is not the source
of difference here. Both engines get one thread (OMP_NUM_THREADS=1), so they judge side by side on a
2-core machine.

    .venv/bin/python -m benchmarks jury \\
        --data ../shared/data/gsm8k-model-solutions/example_model_solutions.dev.jsonl --limit 10

Prints the evaluation table, the judge calls and seconds per group of each configuration, and the jury
metrics (groups by path, calls and failures per judge, the disagreement histogram); the evaluation report
goes to --out, with the jury metrics added.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from benchmarks import REPO_ROOT
from benchmarks.experiment import Experiment, Outcome, option
from benchmarks.report import log, markdown_table
from benchmarks.servers import server_process, workdir
from judge_service.config import PACKAGED_PROMPTS
from tests.engine.vllm_serve import START_TIMEOUT_S, VllmServe, prepared_model

COMPARE = REPO_ROOT / "benchmarks" / "eval_jury.json"
JUDGES = ("own", "strict", "served")


STRICT_RULE = (
    "- Be strict about figures: an answer whose final figure differs from the reference's gets "
    "correctness 1, however well it is written.\n"
)


def strict_prompts(folder: Path) -> Path:
    """A prompts folder holding the service's templates (judge_group) and a stricter variant of them
    (judge_group_strict): one more rule, and the criteria listed in reverse order."""
    shutil.copytree(PACKAGED_PROMPTS / "judge_group", folder / "judge_group")
    strict = folder / "judge_group_strict"
    shutil.copytree(PACKAGED_PROMPTS / "judge_group", strict)
    for template in strict.glob("*system.j2"):
        text = template.read_text().replace("\nCriteria:", STRICT_RULE + "\nCriteria:", 1)
        template.write_text(text.replace("{% for c in criteria %}", "{% for c in criteria | reverse %}"))
    return folder


def jury_setting(server_url: str) -> str:
    served = {"base_url": f"{server_url}/v1", "model": "judge", "timeout_s": 900}
    return json.dumps(
        [
            {"name": "own", "engine": "local"},
            {"name": "strict", **served, "prompt_template": "judge_group_strict"},
            {"name": "served", **served},
        ]
    )


def jury_metrics(text: str) -> dict[str, Any]:
    """The jury's series from the service's /metrics: groups by path, calls and failures per judge, and
    the disagreement histogram's buckets."""
    found: dict[str, Any] = {"groups": {}, "calls": {}, "failures": {}, "disagreement_buckets": {}}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        series, value = line.rsplit(" ", 1)
        label = series.partition('="')[2].rstrip('"}')
        if series.startswith("judge_jury_groups_total{"):
            found["groups"][label] = float(value)
        elif series.startswith("judge_jury_calls_total{"):
            found["calls"][label] = float(value)
        elif series.startswith("judge_jury_failures_total{"):
            found["failures"][label] = float(value)
        elif series.startswith("judge_jury_disagreement_marks_bucket{"):
            found["disagreement_buckets"][label] = float(value)
        elif series in ("judge_jury_disagreement_marks_count", "judge_jury_disagreement_marks_sum"):
            found[series.removeprefix("judge_jury_disagreement_marks_")] = float(value)
    return found


def judge_errors(url: str) -> dict[str, list[str]]:
    """The distinct errors each judge recorded over the run's jury judgements (at most 3 per judge)."""
    page = httpx.get(f"{url}/v1/runs/gsm8k-dev-jury/judgements", params={"limit": 500}, timeout=30).json()
    errors: dict[str, list[str]] = {}
    for item in page["items"]:
        if item["grader"] != "jury":
            continue
        stored = httpx.get(f"{url}/v1/judgements/{item['judgement_id']}", timeout=30).json()
        for record in stored["jury"]:
            seen = errors.setdefault(record["name"], [])
            if record["error"] and record["error"] not in seen and len(seen) < 3:
                seen.append(record["error"])
    return errors


def run(args: Any) -> Outcome:
    one_thread = {"OMP_NUM_THREADS": "1"}
    with workdir("jury") as tmp:
        log("starting vLLM's OpenAI server on the embedded model")
        # A longer context than the tests' server: a group of four GSM8K solutions, marked in one reply.
        server = VllmServe(tmp, prepared_model(), "jury", "--max-model-len", "8192")
        try:
            server.wait_for(f"{server.url}/health", timeout_s=START_TIMEOUT_S)
            env = {
                **one_thread,
                "JUDGE_JURY": jury_setting(server.url),
                "JUDGE_PROMPTS_DIR": str(strict_prompts(tmp / "prompts")),
                "JUDGE_DB_PATH": str(tmp / "judgements.sqlite3"),
            }
            log("starting the service with the jury")
            with server_process(env, tmp / "service.log") as (url, _):
                command = [
                    sys.executable, "-m", "judge_service", "eval", "--url", url, "--data", str(args.data),
                    "--format", "gsm8k-solutions", "--only-mixed", "--limit", str(args.limit),
                    "--compare", str(COMPARE), "--concurrency", str(args.concurrency),
                    "--run-id", "gsm8k-dev-jury", "--out", str(args.out),
                ]  # fmt: skip
                log("judging: " + " ".join(command[2:]))
                subprocess.run(command, check=True, cwd=REPO_ROOT, env={**os.environ, **one_thread})
                metrics = jury_metrics(httpx.get(f"{url}/metrics", timeout=30).text)
                metrics["errors"] = judge_errors(url)
        finally:
            server.stop()
    report = json.loads(args.out.read_text())
    report["jury_metrics"] = metrics
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    rows = [
        [f"{kind} {name}", value]
        for kind in ("groups", "calls", "failures")
        for name, value in metrics[kind].items()
    ]
    rows += [[f"errors of {name}", "; ".join(found) or "-"] for name, found in metrics["errors"].items()]
    return Outcome(
        {"jury_metrics": metrics, "report": str(args.out)}, markdown_table(["jury metric", "value"], rows)
    )


EXPERIMENT = Experiment(
    description="A jury on the embedded judge, with the evaluation tool: the judge alone, a jury of three, "
    "and the jury escalating, on the same labelled groups.",
    options=[
        option("--data", type=Path, required=True),
        option("--limit", 10, "mixed groups judged"),
        option("--concurrency", 4),
        option("--out", REPO_ROOT / "benchmarks/reports/eval_jury_embedded.json", type=Path),
    ],
    run=run,
)

EXPERIMENT.run_if_main(__name__)
