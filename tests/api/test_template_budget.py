"""Template bombs against a service process: each answered as `invalid_variable_error` (422 on validate),
/healthz answering within a small bound while they run, the service judging normally afterwards, and one
key's bombs (many renders that each run to the timeout) unable to keep another key's templates waiting."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service_process import ServiceProcess, group

pytestmark = pytest.mark.timeout(120)

TIMEOUT_S = 1.0
# Loops over the caller's own list: nothing to refuse up front, so only the render process's timeout ends it.
SLOW = (
    "{% for a in item.xs %}{% for b in item.xs %}{% for c in item.xs %}{% endfor %}{% endfor %}{% endfor %}"
)
SLOW_ITEM = {"xs": list(range(2000))}
BOMBS: dict[str, tuple[str, dict[str, Any]]] = {
    "power": ("{{ (7 ** 30000000) % 10 }}", {}),
    "nested_range": ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", {}),
    "repetition": ("{{ ('x' * 300000000) | length }}", {}),
    "big_output": ("{% for i in range(100) %}{{ item.text }}{% endfor %}", {"text": "y" * 60_000}),
    "big_plain_output": ("{{ item.text }}" * 20, {"text": "y" * 60_000}),
    "slow": (SLOW, SLOW_ITEM),
}
# An operator's config whose template computes with the caller's item.
CONFIGURED = {
    "repeat": {
        "type": "string_check",
        "name": "repeat",
        "input": "{{ item.word * item.times }}",
        "reference": "{{ sample.output_text }}",
        "operation": "eq",
    }
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    workdir = tmp_path_factory.mktemp("templates")
    process = ServiceProcess(workdir, template_timeout_s=TIMEOUT_S, rft_graders=json.dumps(CONFIGURED))
    with process:
        yield process


@pytest.fixture(scope="module")
def http(service: ServiceProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, timeout=60) as client:
        yield client


def _check(template: str, reference: str = "x") -> dict[str, Any]:
    return {"type": "string_check", "name": "s", "input": template, "reference": reference, "operation": "eq"}


def _run(http: httpx.Client, template: str, item: dict[str, Any], sample: str = "x") -> dict[str, Any]:
    grader = _check(template, reference="{{ sample.output_text }}")
    response = http.post(
        "/v1/fine_tuning/alpha/graders/run", json={"grader": grader, "model_sample": sample, "item": item}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_each_bomb_is_invalid_variable_error(http: httpx.Client, bomb: str) -> None:
    template, item = BOMBS[bomb]
    started = time.perf_counter()
    body = _run(http, template, item)
    assert body["reward"] == 0.0 and body["metadata"]["errors"]["invalid_variable_error"] is True
    assert time.perf_counter() - started < TIMEOUT_S + 3  # a render process start at most, then the timeout


def test_healthz_answers_while_bombs_run(service: ServiceProcess, http: httpx.Client) -> None:
    latencies: list[float] = []
    with ThreadPoolExecutor(4) as bombers, httpx.Client(base_url=service.url, timeout=60) as probe:
        bombs = [bombers.submit(_run, http, SLOW, SLOW_ITEM) for _ in range(4)]
        time.sleep(0.3)
        while not all(bomb.done() for bomb in bombs):
            started = time.perf_counter()
            assert probe.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.05)
        for bomb in bombs:
            assert bomb.result()["metadata"]["errors"]["invalid_variable_error"] is True
    assert len(latencies) >= 5 and max(latencies) < 0.5, latencies


def test_validate_refuses_bombs_with_422(http: httpx.Client) -> None:
    for bomb in ("power", "nested_range", "repetition"):
        response = http.post(
            "/v1/fine_tuning/alpha/graders/validate", json={"grader": _check(BOMBS[bomb][0])}
        )
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["details"]["flag"] == "invalid_variable_error" and "over its budget" in error["message"]
    valid = http.post("/v1/fine_tuning/alpha/graders/validate", json={"grader": _check(SLOW)})
    assert valid.status_code == 200, valid.text


def test_a_configured_grader_refuses_a_bomb_in_the_callers_item(http: httpx.Client) -> None:
    bomb = group(2, grader="repeat", item={"word": "x", "times": 10**9})
    body = http.post("/v1/judge", json=bomb).json()
    assert [answer["score"] for answer in body["answers"]] == [None, None]
    assert all("over its budget" in answer["explanation"] for answer in body["answers"])
    fine = group(2, grader="repeat", item={"word": "ab", "times": 2})
    fine["answers"][0]["text"] = "abab"
    assert [answer["score"] for answer in http.post("/v1/judge", json=fine).json()["answers"]] == [1.0, 0.0]


def test_the_service_judges_normally_after_the_bombs(service: ServiceProcess, http: httpx.Client) -> None:
    for bomb in ("slow", "power"):
        _run(http, *BOMBS[bomb])
    plain = _run(http, "{{ item.answer }}", {"answer": "Paris"}, sample="Paris")
    computed = _run(http, "{{ item.answer | upper }}", {"answer": "Paris"}, sample="PARIS")
    assert plain["reward"] == 1.0 and computed["reward"] == 1.0
    judged = http.post("/v1/judge", json=group(2, grader="similarity"))
    assert judged.status_code == 200 and all(a["status"] == "scored" for a in judged.json()["answers"])
    assert http.get("/readyz").status_code == 200


def test_no_render_process_outlives_the_service(tmp_path: Path) -> None:
    with (
        ServiceProcess(tmp_path, template_timeout_s=TIMEOUT_S) as process,
        httpx.Client(base_url=process.url, timeout=60) as client,
    ):
        _run(client, "{{ item.answer | upper }}", {"answer": "Paris"})
        workers = _render_processes(parent=process.pid)
        assert workers
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)


def _render_processes(parent: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"judge_service.judging.rft.template_worker" in cmdline:
            found.add(int(entry.name))
    return found


# Each render of this runs to the timeout: nothing in it is refused up front.
LIPSUM = "{{ lipsum(10**6) | length }}"
ATTACKER, VICTIM = "attacker-key-0123456789", "victim-key-0123456789"
# An operator's config fed the bomb through the caller's item, on every answer of a group.
CONFIGURED_BOMBABLE = {
    "lorem": {
        "type": "multi",
        "name": "lorem",
        "graders": {
            f"s{i}": {
                "type": "string_check",
                "name": f"s{i}",
                "input": "{{ lipsum(item.n) | length }}",
                "reference": "{{ lipsum(item.n) | length }}",
                "operation": "eq",
            }
            for i in range(8)
        },
        "calculate_output": "s0",
    }
}


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """Two `judge` keys on a service with the default two render processes."""
    workdir = tmp_path_factory.mktemp("keyed")
    entries = [
        {"name": name, "sha256": hashlib.sha256(key.encode()).hexdigest(), "scopes": ["judge"]}
        for name, key in (("attacker", ATTACKER), ("victim", VICTIM))
    ]
    keys_file = workdir / "keys.json"
    keys_file.write_text(json.dumps({"keys": entries}))
    settings = {"api_keys_file": keys_file, "rft_graders": json.dumps(CONFIGURED_BOMBABLE)}
    process = ServiceProcess(workdir, template_timeout_s=TIMEOUT_S, template_workers=2, **settings)
    with process:
        yield process


def _post(service: ServiceProcess, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    response = httpx.post(f"{service.url}{path}", json=body, headers=headers, timeout=120)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _victim_waits(service: ServiceProcess, attacks: list[Future[dict[str, Any]]]) -> list[float]:
    """The victim's non-plain template, run again and again while the attacks last: each one's latency."""
    victim = {
        "grader": _check("{{ sample.output_text | upper }}", reference="PARIS"),
        "model_sample": "Paris",
        "item": {},
    }
    latencies = []
    time.sleep(0.3)  # the attacks' renders are in the pool
    while not all(attack.done() for attack in attacks):
        started = time.perf_counter()
        body = _post(service, VICTIM, "/v1/fine_tuning/alpha/graders/run", victim)
        latencies.append(time.perf_counter() - started)
        assert body["reward"] == 1.0, body
    return latencies


def test_one_key_cannot_hold_the_render_processes(keyed: ServiceProcess) -> None:
    """Two runs of 64 renders that each run to the timeout: every one of them invalid_variable_error,
    after one render timeout's worth, and the other key's template answered within a small bound."""
    members = {f"s{i}": _check(LIPSUM, reference=LIPSUM) for i in range(32)}
    attack = {
        "grader": {"type": "multi", "name": "lorem", "graders": members, "calculate_output": "s0"},
        "model_sample": "x",
        "item": {},
    }
    path = "/v1/fine_tuning/alpha/graders/run"
    with ThreadPoolExecutor(2) as attackers:
        started = time.perf_counter()
        attacks = [attackers.submit(_post, keyed, ATTACKER, path, attack) for _ in range(2)]
        latencies = _victim_waits(keyed, attacks)
        replies = [attack.result() for attack in attacks]
        attack_s = time.perf_counter() - started
    assert latencies and max(latencies) < 4.0, latencies
    for reply in replies:
        errors = {flag for flag, value in reply["metadata"]["errors"].items() if value is True}
        assert errors == {"invalid_variable_error"} and reply["sub_rewards"] == {}, reply  # no member scored
    assert attack_s < 8.0, attack_s


def test_a_configured_grader_fed_a_bomb_cannot_hold_the_render_processes(keyed: ServiceProcess) -> None:
    """The same through an operator's config and the caller's item, on every answer of two groups."""
    bomb = group(4, grader="lorem", item={"n": 10**6})
    with ThreadPoolExecutor(2) as attackers:
        attacks = [attackers.submit(_post, keyed, ATTACKER, "/v1/judge", bomb) for _ in range(2)]
        latencies = _victim_waits(keyed, attacks)
        replies = [attack.result() for attack in attacks]
    assert latencies and max(latencies) < 4.0, latencies
    for reply in replies:
        for answer in reply["answers"]:
            assert answer["score"] is None and "invalid_variable_error" in answer["explanation"], answer
