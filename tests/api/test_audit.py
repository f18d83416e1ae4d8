"""The audit judge (JUDGE_AUDIT, watch/auditor.py) through the service: a training judge (the fake, in
process) and an audit judge (an OpenAI-compatible fake in a process of its own, or the service's own
engine), scripted by the answers' texts to agree or to part; what is stored and served per step, the
onset and its gauge, the bounded backlog, failures, and rewards that the audit never touches."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge_service.backends.fake import MARK_ANSWER, MARK_BY_MODEL, FakeBackend
from judge_service.quality.onset import WARMUP
from tests.api.conftest import make_client, wait_ready
from tests.scaleout.processes import FakeEngine, free_port
from tests.service_process import metric_value

AUDITOR = "auditor"


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FakeEngine]]:
    workdir = tmp_path_factory.mktemp("audit-engines")
    started: dict[str, FakeEngine] = {}
    try:
        started["quick"] = FakeEngine(workdir, "quick", latency_s=0.0, model=AUDITOR)
        started["slow"] = FakeEngine(workdir, "slow", latency_s=1.0, model=AUDITOR)
        yield started
    finally:
        for engine in started.values():
            engine.stop()


def auditor(engine: FakeEngine, **extra: Any) -> str:
    return json.dumps({"name": "audit", "base_url": f"{engine.url}/v1", "model": AUDITOR, **extra})


def audited_client(tmp_path: Path, audit: str | None, **settings: Any) -> TestClient:
    extra = {} if audit is None else {"audit": audit}
    return make_client(
        tmp_path, FakeBackend(), openai_transport_retries=0, health_interval_s=0.1, **extra, **settings
    )


def answer(training: int, audit: int) -> str:
    """An answer the training judge marks `training` and the audit judge `audit`, on every criterion."""
    return f"{MARK_ANSWER.format(training)} {MARK_BY_MODEL.format(AUDITOR, audit)}"


def group(step: int, marks: list[tuple[int, int]], run_id: str = "run-a", **extra: Any) -> dict[str, Any]:
    return {
        "conversation": [{"role": "user", "content": "How many clips did Natalia sell?"}],
        "reference": "Natalia sold 72 clips.",
        "answers": [{"id": f"a{i}", "text": answer(t, a)} for i, (t, a) in enumerate(marks)],
        "run_id": run_id,
        "step": step,
        **extra,
    }


def judged(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def metric(client: TestClient, name: str, **labels: str) -> float | None:
    try:
        return metric_value(client.get("/metrics").text, name, **labels)
    except KeyError:
        return None


def wait_for(check: Any, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        if time.monotonic() > deadline:
            raise TimeoutError("the audit did not get there in time")
        time.sleep(0.02)
    return found


def steps(client: TestClient, run_id: str = "run-a") -> dict[str, Any]:
    response = client.get(f"/v1/runs/{run_id}/steps")
    assert response.status_code == 200, response.text
    return dict(response.json())


AGREE = [(5, 5), (3, 3), (1, 1)]


def test_audited_groups_are_stored_and_charted_per_step(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    with audited_client(tmp_path, auditor(engines["quick"]), audit_rate=1.0) as client:
        wait_ready(client)
        for step in (0, 0, 1):
            judged(client, group(step, AGREE))
        judged(client, group(1, [(5, 1), (3, 3), (1, 5)]))  # the judges rank these the other way round
        figures = wait_for(lambda: (f := steps(client))["audit"] and f["audit"]["audited_groups"] == 4 and f)
    by_step = {item["step"]: item["audit"] for item in figures["items"]}
    assert by_step[0]["groups"] == 2
    assert by_step[0]["rank_correlation"] == pytest.approx(1.0)
    assert by_step[0]["gap"] == pytest.approx(0.0)
    assert by_step[0]["best_disagreement"] == 0.0
    # Step 1: one group agreeing (rho 1), one reversed (rho -1, best answers differ).
    assert by_step[1]["groups"] == 2
    assert by_step[1]["rank_correlation"] == pytest.approx(0.0)
    assert by_step[1]["best_disagreement"] == 0.5
    assert set(by_step[1]["criterion_gaps"]) == {"correctness", "helpfulness", "tone", "format"}
    assert figures["audit"]["onset"] is None  # far fewer groups than the detector's warm-up
    assert figures["audit"]["warmup_groups"] == WARMUP


def test_rewards_are_byte_identical_with_the_audit_on_and_off(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    bodies = [group(s, [(5, 1), (4, 2), (2, 4)], seed=11 + s) for s in range(6)]
    replies = {}
    for audit in (None, auditor(engines["quick"])):
        with audited_client(tmp_path / str(audit is None), audit, audit_rate=1.0) as client:
            wait_ready(client)
            replies[audit is None] = [json.dumps(judged(client, b)["answers"]) for b in bodies]
            if audit is not None:  # the audit ran beside these replies, and disagreed throughout
                wait_for(lambda c=client: (f := steps(c))["audit"] and f["audit"]["audited_groups"] == 6)
    assert replies[True] == replies[False]


def test_a_step_gets_its_share_of_audits_within_one(tmp_path: Path, engines: dict[str, FakeEngine]) -> None:
    with audited_client(tmp_path, auditor(engines["quick"]), audit_rate=0.25) as client:
        wait_ready(client)
        for step in range(3):
            for _ in range(10):
                judged(client, group(step, AGREE))
        judged(client, {**group(3, AGREE), "run_id": None, "step": None})  # no run step: never audited
        figures = wait_for(
            lambda: (f := steps(client))["audit"] and metric(client, "judge_audit_backlog") == 0 and f
        )
        time.sleep(0.2)  # a last audit being stored
        figures = steps(client)
    for item in figures["items"]:
        assert item["audit"]["groups"] in (2, 3), item  # 10 groups at 25%: 2.5
    assert figures["audit"]["audited_groups"] == sum(i["audit"]["groups"] for i in figures["items"])


def test_a_full_backlog_drops_groups_and_counts_them(tmp_path: Path, engines: dict[str, FakeEngine]) -> None:
    with audited_client(
        tmp_path, auditor(engines["slow"]), audit_rate=1.0, audit_backlog=2, audit_concurrency=1
    ) as client:
        wait_ready(client)
        started = time.monotonic()
        for step in range(8):
            judged(client, group(step, AGREE))
        assert time.monotonic() - started < 5  # the 1 s audit judge delayed no reply
        assert (metric(client, "judge_audit_backlog") or 0) <= 2
        # One being audited, two waiting: the other five were dropped as they came.
        assert metric(client, "judge_audit_groups_total", outcome="dropped") == 5
    # Stopping the service drops what is still waiting or being audited, and says so.
    dropped = metric_after_close(client)
    assert dropped is not None and dropped >= 5


def metric_after_close(client: TestClient) -> float | None:
    registry = client.app.state.metrics.registry  # type: ignore[attr-defined]
    value = registry.get_sample_value("judge_audit_groups_total", {"outcome": "dropped"})
    return None if value is None else float(value)


def test_an_audit_judge_that_fails_is_counted_and_the_reward_stands(tmp_path: Path) -> None:
    down = json.dumps({"name": "audit", "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": AUDITOR})
    with audited_client(tmp_path, down, audit_rate=1.0, openai_timeout_s=2) as client:
        wait_ready(client)
        reply = judged(client, group(0, AGREE))
        assert [a["status"] for a in reply["answers"]] == ["scored"] * 3
        wait_for(lambda: metric(client, "judge_audit_groups_total", outcome="failed") == 1)
        assert steps(client)["audit"] is None


def test_a_regrade_is_not_audited(tmp_path: Path, engines: dict[str, FakeEngine]) -> None:
    with audited_client(tmp_path, auditor(engines["quick"]), audit_rate=1.0) as client:
        wait_ready(client)
        first = judged(client, group(0, AGREE))
        wait_for(lambda: metric(client, "judge_audit_groups_total", outcome="audited") == 1)
        regraded = client.post("/v1/regrade", json={"judgement_ids": [first["judgement_id"]]})
        assert regraded.status_code == 200, regraded.text
        time.sleep(0.3)
        assert metric(client, "judge_audit_groups_total", outcome="audited") == 1


def test_a_policy_that_games_the_training_judge_is_found_and_named(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    """Both judges agree for the warm-up; from step ONSET on, the policy's marked answer gets a 5 from
    the training judge and a 1 from the audit judge."""
    onset = WARMUP // 2 + 5  # two audited groups a step
    with audited_client(tmp_path, auditor(engines["quick"]), audit_rate=1.0) as client:
        wait_ready(client)
        for step in range(onset + 10):
            for _ in range(2):
                gamed = step >= onset
                judged(client, group(step, [(5, 1) if gamed else (2, 2), (3, 3), (1, 1)]))
        figures = wait_for(lambda: (f := steps(client))["audit"]["audited_groups"] == 2 * (onset + 10) and f)
        found = figures["audit"]["onset"]
        assert found is not None and found["figure"] == "gap"
        assert onset <= found["detected_at_step"] <= onset + 3
        assert found["began_at_step"] == onset
        gauge = metric(client, "judge_audit_divergence_onset_step", run_id="run-a")
        assert gauge == onset
        # The run page charts it and marks where it began.
        page = client.get("/ui/runs/run-a")
        assert page.status_code == 200
        assert "Training judge less audit judge" in page.text
        assert f"divergence from step {onset}" in page.text


def test_the_audit_setting_says_what_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no JUDGE_JURY judge"), audited_client(tmp_path, "nobody"):
        pass
    secret = json.dumps({"name": "audit", "base_url": "http://x/v1", "api_key": "sk-hidden-1234", "oops": 1})
    with pytest.raises(ValueError) as raised, audited_client(tmp_path, secret):
        pass
    assert "oops" in str(raised.value) and "sk-hidden-1234" not in str(raised.value)
    garbled = '"name": "audit", "api_key": "sk-hidden-5678"'  # not an object: neither quoted nor read
    with pytest.raises(ValueError) as raised, audited_client(tmp_path, garbled):
        pass
    assert "neither" in str(raised.value) and "sk-hidden-5678" not in str(raised.value)


def test_the_service_engine_can_audit_itself_with_another_template(tmp_path: Path) -> None:
    local = json.dumps({"name": "self", "engine": "local", "temperature": 0.0})
    with audited_client(tmp_path, local, audit_rate=1.0) as client:
        wait_ready(client)
        judged(client, group(0, AGREE))
        figures = wait_for(lambda: (f := steps(client))["audit"] and f)
        assert figures["items"][0]["audit"]["rank_correlation"] == pytest.approx(1.0)


def test_a_judgements_audit_is_served_and_an_unaudited_one_is_a_404_that_says_why(
    tmp_path: Path, engines: dict[str, FakeEngine]
) -> None:
    with audited_client(tmp_path, auditor(engines["quick"]), audit_rate=1.0) as client:
        wait_ready(client)
        first = judged(client, group(0, [(5, 1), (3, 3), (1, 5)]))
        loose = judged(client, {**group(0, AGREE), "run_id": None, "step": None})
        record = wait_for(
            lambda: (r := client.get(f"/v1/judgements/{first['judgement_id']}/audit")).is_success and r
        )
        audit = record.json()
        assert audit["judge"] == "audit" and audit["model"] == AUDITOR
        assert [(a["id"], a["training"], a["audit"]) for a in audit["answers"]] == [
            ("a0", 1.0, 0.0),
            ("a1", 0.5, 0.5),
            ("a2", 0.0, 1.0),
        ]
        assert audit["rank_correlation"] == pytest.approx(-1.0) and audit["best_differs"] is True
        missing = client.get(f"/v1/judgements/{loose['judgement_id']}/audit")
        assert missing.status_code == 404 and "was not audited" in missing.json()["error"]["message"]
        assert client.get(f"/v1/judgements/{'f' * 32}/audit").status_code == 404


def test_groups_no_judge_scored_are_not_audited(tmp_path: Path, engines: dict[str, FakeEngine]) -> None:
    """Rule graders alone: no judge to audit, and no cheap way to fill the audit's backlog."""
    with audited_client(tmp_path, auditor(engines["quick"]), audit_rate=1.0) as client:
        wait_ready(client)
        body = {**group(0, AGREE), "grader": "exact"}
        assert client.post("/v1/judge", json=body).status_code == 200
        judged(client, group(0, AGREE))
        wait_for(lambda: metric(client, "judge_audit_groups_total", outcome="audited") == 1)
        time.sleep(0.3)
        assert metric(client, "judge_audit_groups_total", outcome="audited") == 1
        assert steps(client)["audit"]["audited_groups"] == 1
