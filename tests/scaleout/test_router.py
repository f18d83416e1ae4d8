"""The service's OpenAI backend in front of the real vllm-router over two engines (fake engines here;
tests/engine/test_router_engine.py runs real `vllm serve` engines): the calls of one group stay together
on one engine when the router hashes the group header, groups spread over both engines, and when an
engine dies the groups keep succeeding through the other."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.scaleout.fake_engine import MODEL
from tests.scaleout.load import body
from tests.scaleout.processes import FakeEngine, Router
from tests.service_process import ServiceProcess, metric_value


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[list[FakeEngine]]:
    started = [FakeEngine(tmp_path, "A"), FakeEngine(tmp_path, "B")]
    yield started
    for engine in started:
        engine.stop()


def judge_through(tmp_path: Path, router: Router) -> ServiceProcess:
    return ServiceProcess(
        tmp_path,
        backend="openai",
        openai_base_url=f"{router.url}/v1",
        served_model_name=MODEL,
        openai_transport_retries=3,
        openai_backoff_base_s=0.05,
    ).start()


def send_groups(service: ServiceProcess, first: int, count: int, **extra: object) -> list[httpx.Response]:
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(6) as pool:
        return list(
            pool.map(
                lambda i: client.post(f"{service.url}/v1/judge", json={**body(i, "router"), **extra}),
                range(first, first + count),
            )
        )


def test_one_groups_calls_stay_on_one_engine_and_groups_spread(
    tmp_path: Path, engines: list[FakeEngine]
) -> None:
    router = Router(tmp_path, [e.url for e in engines], "consistent_hash")
    service = judge_through(tmp_path, router)
    try:
        replies = send_groups(service, 0, 16, orders=2)  # two engine calls per group
        assert {r.status_code for r in replies} == {200}
        judged = {r.json()["judgement_id"] for r in replies}
        seen = [e.stats()["sessions"] for e in engines]
    finally:
        service.stop()
        router.stop()
    assert all(seen), f"one engine got every group: {[len(s) for s in seen]}"
    by_engine = [set(s) for s in seen]  # type: ignore[arg-type]
    assert by_engine[0].isdisjoint(by_engine[1])  # a group never split over the engines
    assert by_engine[0] | by_engine[1] == judged  # the header names the judgement
    assert all(count == 2 for s in seen for count in s.values())  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", ["power_of_two", "consistent_hash"])
def test_when_an_engine_dies_groups_keep_succeeding_through_the_other(
    tmp_path: Path, engines: list[FakeEngine], policy: str
) -> None:
    router = Router(tmp_path, [e.url for e in engines], policy, "--health-check-interval-secs", "1")
    service = judge_through(tmp_path, router)
    try:
        assert {r.status_code for r in send_groups(service, 0, 12)} == {200}
        engines[0].stop()  # SIGKILL
        after = send_groups(service, 100, 24)
        survivor = engines[1].stats()
        metrics = router.metrics()
    finally:
        service.stop()
        router.stop()
    assert [r.status_code for r in after] == [200] * 24, [r.text for r in after if r.status_code != 200]
    assert int(survivor["requests"]) >= 24  # type: ignore[call-overload]
    # The router retried the calls that met the dead engine and opened its circuit breaker.
    assert f'vllm_router_cb_state{{worker="{engines[0].url}"}} 1' in metrics
    assert metric_value(metrics, 'vllm_router_retries_total{route="/v1/chat/completions"}') > 0
