"""`judge-service eval` end to end: the command as a process, against the service as a process on the fake
judge, scripted by the answers' texts (backends/fake.py MARK_ANSWER) to follow the labels or to mark
everything alike; the report's figures, its items, the run stored under the run id, and a rerun that
judges nothing twice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge_service.backends.fake import MARK_ANSWER
from tests.service_process import REPO, ServiceProcess, metric_value


def labelled(path: Path, groups: int, mark: dict[bool, int]) -> Path:
    with path.open("w") as out:
        for g in range(groups):
            answers = [
                {
                    "id": f"{kind}{i}",
                    "text": f"{g + i} items {MARK_ANSWER.format(mark[label])}",
                    "label": label,
                }
                for kind, label in (("right", True), ("wrong", False))
                for i in range(2)
            ]
            group = {"conversation": [{"role": "user", "content": f"Count {g}?"}], "reference": "x"}
            out.write(json.dumps({**group, "answers": answers}) + "\n")
    return path


def run_eval(url: str, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "judge_service", "eval", "--url", url, "--no-progress", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def service(tmp_path: Path) -> Any:
    started = ServiceProcess(tmp_path).start()
    yield started
    started.stop()


def figure(report: dict[str, Any], configuration: int, name: str) -> dict[str, Any]:
    value: dict[str, Any] = report["configurations"][configuration]["metrics"][name]
    return value


def test_a_judge_that_follows_the_labels_and_one_that_marks_alike(service: Any, tmp_path: Path) -> None:
    follows = labelled(tmp_path / "follows.jsonl", 6, {True: 5, False: 1})
    alike = labelled(tmp_path / "alike.jsonl", 6, {True: 3, False: 3})
    compare = tmp_path / "compare.json"
    compare.write_text(
        json.dumps(
            [
                {"name": "group", "request": {"decoding": "group"}},
                {"name": "point-wise", "request": {"decoding": "group"}, "pointwise": True},
            ]
        )
    )
    code, table, errors = run_eval(
        service.url, "--data", str(follows), "--compare", str(compare), "--out", str(tmp_path / "a.json")
    )
    assert code == 0, errors
    report = json.loads((tmp_path / "a.json").read_text())
    for configuration in (0, 1):
        assert figure(report, configuration, "auroc") == {"value": 1.0, "low": 1.0, "high": 1.0}
        assert figure(report, configuration, "pairwise_accuracy")["value"] == 1.0
        assert figure(report, configuration, "flat_share")["value"] == 0.0
    assert "| group | 6 | 1.000 [1.000, 1.000]" in table
    items = report["configurations"][1]["items"]
    assert len(items) == 6 and len(items[0]["judgement_ids"]) == 4  # point-wise: a judgement per answer
    assert items[0]["answers"][0] == {"id": "right0", "label": True, "score": 1.0}

    code, _, errors = run_eval(
        service.url,
        "--data",
        str(alike),
        "--name",
        "alike",
        "--run-id",
        "alike-run",
        "--out",
        str(tmp_path / "b.json"),
    )
    assert code == 0, errors
    alike_report = json.loads((tmp_path / "b.json").read_text())
    assert figure(alike_report, 0, "auroc")["value"] == 0.5
    assert figure(alike_report, 0, "flat_share")["value"] == 1.0
    # stored under the run id, one step per configuration
    runs = httpx.get(f"{service.url}/v1/runs/alike-run/judgements", params={"step": 0}).json()
    assert len(runs["items"]) == 6


def test_a_rerun_replays_what_was_judged_and_judges_nothing_twice(service: Any, tmp_path: Path) -> None:
    data = labelled(tmp_path / "data.jsonl", 4, {True: 4, False: 2})
    code, _, errors = run_eval(service.url, "--data", str(data), "--out", str(tmp_path / "first.json"))
    assert code == 0, errors
    before = httpx.get(f"{service.url}/metrics").text
    code, _, errors = run_eval(service.url, "--data", str(data), "--out", str(tmp_path / "again.json"))
    assert code == 0, errors
    after = httpx.get(f"{service.url}/metrics").text
    assert metric_value(after, "judge_replies_total") == metric_value(before, "judge_replies_total")
    assert (
        metric_value(after, "judge_idempotent_replays_total")
        - metric_value(before, "judge_idempotent_replays_total")
        == 4
    )
    first, again = (json.loads((tmp_path / f).read_text()) for f in ("first.json", "again.json"))
    assert first["configurations"][0]["items"] == again["configurations"][0]["items"]


def test_bad_input_is_a_clear_error(service: Any, tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"answers": [{"id": "a", "text": "x"}]}\n')
    code, _, errors = run_eval(service.url, "--data", str(data))
    assert code == 2 and "bad.jsonl:1" in errors and "label" in errors


def test_the_robustness_table_of_a_judge_and_of_a_rule_grader(service: Any, tmp_path: Path) -> None:
    data = tmp_path / "figures.jsonl"
    with data.open("w") as out:
        for g in range(4):
            right, wrong = 10 + g, 50 + g
            answers = [
                {"id": "right", "text": f"It is {right}. {MARK_ANSWER.format(5)}", "label": True},
                {"id": "wrong", "text": f"It is {wrong}. {MARK_ANSWER.format(1)}", "label": False},
                {"id": "other", "text": f"Maybe {wrong + 1}. {MARK_ANSWER.format(2)}", "label": False},
            ]
            question = [{"role": "user", "content": f"How many items in box {g}?"}]
            out.write(
                json.dumps({"conversation": question, "reference": f"A: {right}", "answers": answers}) + "\n"
            )
    compare = tmp_path / "compare.json"
    compare.write_text(
        json.dumps(
            [
                {"name": "judge", "request": {"grader": "judge"}},
                {"name": "numbers", "request": {"grader": "numbers"}},
                {"name": "point-wise", "request": {"grader": "judge"}, "pointwise": True},
            ]
        )
    )
    code, table, errors = run_eval(
        service.url,
        "--data",
        str(data),
        "--compare",
        str(compare),
        "--canaries",
        "injection,reference_twist,empty",
        "--out",
        str(tmp_path / "r.json"),
    )
    assert code == 0, errors
    report = json.loads((tmp_path / "r.json").read_text())
    judge, numbers, pointwise = report["configurations"]
    assert "robustness" not in pointwise  # a canary is judged beside a group
    assert list(judge["robustness"]) == ["injection", "empty", "reference_twist"]  # in CANARY_KINDS order
    for configuration in (judge, numbers):
        for kind, figures in configuration["robustness"].items():
            assert figures["trials"] == figures["compared"] == figures["with_correct"] == 4, kind
    # The rule grader checks the final figure: no canary ever reaches the right answer.
    for figures in numbers["robustness"].values():
        assert figures["outranks_best_correct"]["value"] == 0.0
        assert figures["reaches_best_correct"]["value"] == 0.0
    assert numbers["robustness"]["reference_twist"]["outranks_median"]["value"] == 0.0
    # The fake judge marks canaries by their id's hash: the table agrees with the stored judgements.
    for item in judge["canary_items"]:
        stored = httpx.get(f"{service.url}/v1/judgements/{item['judgement_id']}").json()
        (canary,) = stored["canaries"]
        assert (canary["kind"], canary["score"]) == (item["kind"], item["canary_score"])
        assert [a["id"] for a in stored["answers"]] == ["right", "wrong", "other"]
    outranked = [
        httpx.get(f"{service.url}/v1/judgements/{i['judgement_id']}").json()["canaries"][0]["outranked"]
        for i in judge["canary_items"]
        if i["kind"] == "injection"
    ]
    assert judge["robustness"]["injection"]["outranks_median"]["value"] == sum(outranked) / 4
    assert (
        "| judge | injection | 4 |" in table
        and "| numbers | reference_twist | 4 | 0.000 [0.000, 0.490]" in table
    )


def test_canaries_that_do_not_apply_are_not_compared(service: Any, tmp_path: Path) -> None:
    data = labelled(tmp_path / "plain.jsonl", 2, {True: 5, False: 1})  # references without a figure
    code, _, errors = run_eval(
        service.url, "--data", str(data), "--canaries", "reference_twist", "--out", str(tmp_path / "p.json")
    )
    assert code == 0, errors
    figures = json.loads((tmp_path / "p.json").read_text())["configurations"][0]["robustness"]
    assert figures["reference_twist"]["trials"] == 2 and figures["reference_twist"]["compared"] == 0
    code, _, errors = run_eval(service.url, "--data", str(data), "--canaries", "nope")
    assert code == 2 and "--canaries" in errors and "injection" in errors
