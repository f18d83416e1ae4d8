"""The judge fleet for real on the embedded model: the service's OpenAI backend through vllm-router over
two `vllm serve` engines. Groups spread over both engines; one engine killed, the groups keep succeeding
through the other."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.engine.vllm_serve import START_TIMEOUT_S, VllmServe, prepared_model
from tests.scaleout.processes import Router
from tests.service_process import ServiceProcess

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[VllmServe]]:
    workdir = tmp_path_factory.mktemp("fleet")
    model = prepared_model()
    started = [VllmServe(workdir, model, "a"), VllmServe(workdir, model, "b")]
    try:
        for engine in started:
            engine.wait_for(f"{engine.url}/health", timeout_s=START_TIMEOUT_S)
        yield started
    finally:
        for engine in started:
            engine.stop()


def group(i: int) -> dict[str, object]:
    return {
        "conversation": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "reference": f"{2 * i}",
        "answers": [{"id": "a", "text": f"{2 * i}"}, {"id": "b", "text": f"{2 * i + 1}"}],
        "run_id": "fleet",
    }


def test_groups_spread_over_two_engines_and_survive_one_dying(
    engines: list[VllmServe], tmp_path: Path
) -> None:
    router = Router(
        tmp_path, [e.url for e in engines], "consistent_hash", "--health-check-interval-secs", "2"
    )
    service = ServiceProcess(
        tmp_path,
        backend="openai",
        openai_base_url=f"{router.url}/v1",
        served_model_name="judge",
        reason_max_chars=16,
        openai_timeout_s=300,
    ).start(timeout_s=60)
    try:
        with httpx.Client(timeout=600) as client, ThreadPoolExecutor(4) as pool:
            first = list(pool.map(lambda i: client.post(f"{service.url}/v1/judge", json=group(i)), range(8)))
            assert [r.status_code for r in first] == [200] * 8, [
                r.text for r in first if r.status_code != 200
            ]
            served = [e.requests_served() for e in engines]
            assert all(n > 0 for n in served), f"one engine judged every group: {served}"
            engines[0].kill()
            started = time.monotonic()
            after = list(
                pool.map(lambda i: client.post(f"{service.url}/v1/judge", json=group(i)), range(8, 12))
            )
        assert [r.status_code for r in after] == [200] * 4, [r.text for r in after if r.status_code != 200]
        assert all(r.json()["status"] in ("ok", "partial") for r in after)
        assert engines[1].requests_served() >= served[1] + 4
        took = time.monotonic() - started
        print(f"\nengine calls before the kill: {served}; 4 groups after it in {took:.0f} s")
    finally:
        service.stop()
        router.stop()
