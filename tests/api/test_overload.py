"""Overload from a second process on loopback: a burst far over capacity gets 200 or 429, nothing else.

The service runs as a real subprocess with a slow scripted judge and tiny admission caps; a burst of
concurrent requests (bounded count and time) must each end in 200 with a judgement or 429 with
Retry-After: no 5xx, no hang. The admission queue never exceeds its cap while the burst runs, memory
stays bounded, and the service is healthy and idle afterwards.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.service_process import ServiceProcess, group, metric_value

IN_FLIGHT = 2
QUEUED = 3
LATENCY_S = 0.4
BURST = 40

pytestmark = pytest.mark.timeout(90)  # a hang fails the test instead of the CI run


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        tmp_path,
        fake_latency_s=LATENCY_S,
        max_groups_in_flight=IN_FLIGHT,
        max_groups_queued=QUEUED,
        parse_retries=0,
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


class Sampler(threading.Thread):
    """Reads the admission gauges from /metrics while the burst runs and keeps the maxima."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.max_queue = 0.0
        self.max_in_flight = 0.0
        self.samples = 0

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while not self.stop.is_set():
                text = client.get("/metrics").text
                self.max_queue = max(self.max_queue, metric_value(text, "judge_queue_depth"))
                self.max_in_flight = max(self.max_in_flight, metric_value(text, "judge_groups_in_flight"))
                self.samples += 1
                time.sleep(0.01)


def test_burst_over_capacity_gets_200_or_429_and_the_service_survives(service: ServiceProcess) -> None:
    rss_before = service.rss_kib()
    sampler = Sampler(service.url)
    sampler.start()

    def one(i: int) -> httpx.Response:
        with httpx.Client(base_url=service.url, timeout=20) as client:
            return client.post("/v1/judge", json=group(4, group_key=f"g{i}"))

    with ThreadPoolExecutor(max_workers=BURST) as pool:
        responses = list(pool.map(one, range(BURST)))
    sampler.stop.set()
    sampler.join(timeout=10)

    statuses = sorted({r.status_code for r in responses})
    assert set(statuses) <= {200, 429}, [
        (r.status_code, r.text[:200]) for r in responses if r.status_code >= 500
    ]
    ok = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code == 429]
    assert len(ok) >= IN_FLIGHT + QUEUED, statuses
    assert refused, "a burst of 40 over capacity 5 must be refused in part"
    for response in ok:
        body = response.json()
        assert body["status"] == "ok" and len(body["answers"]) == 4
    for response in refused:
        assert int(response.headers["Retry-After"]) >= 1
        error = response.json()["error"]
        assert error["code"] == "overloaded" and "retry" in error["message"]

    assert sampler.samples > 3
    assert sampler.max_queue <= QUEUED, sampler.max_queue
    assert sampler.max_in_flight <= IN_FLIGHT, sampler.max_in_flight
    assert sampler.max_queue >= 1  # the sampler did see the queue in use

    rss_after = service.rss_kib()
    if rss_before is not None and rss_after is not None:
        assert rss_after - rss_before < 100 * 1024, (rss_before, rss_after)

    with httpx.Client(base_url=service.url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").json() == {"status": "ready", "backend": "fake"}
        after = client.post("/v1/judge", json=group(2))
        assert after.status_code == 200, after.text
        text = client.get("/metrics").text
        assert metric_value(text, "judge_queue_depth") == 0
        assert metric_value(text, "judge_groups_in_flight") == 0
        assert f'judge_requests_total{{endpoint="/v1/judge",key="",status="429"}} {len(refused)}.0' in text
        assert 'status="500"' not in text


def test_refused_callers_that_honour_retry_after_are_judged(service: ServiceProcess) -> None:
    """Back-off works: every caller that waits Retry-After and retries eventually gets a judgement."""

    def patient(i: int) -> int:
        with httpx.Client(base_url=service.url, timeout=20) as client:
            for _ in range(20):
                response = client.post("/v1/judge", json=group(1, group_key=f"p{i}"))
                if response.status_code != 429:
                    return response.status_code
                time.sleep(float(response.headers["Retry-After"]) * 0.2)  # scaled down for the test
            return 429

    with ThreadPoolExecutor(max_workers=12) as pool:
        assert list(pool.map(patient, range(12))) == [200] * 12


def refusal_without_sending_the_body(port: int, declared_bytes: int) -> int:
    """Send only the headers of a POST that declares a large body, and read the answer: a server that
    waits for the body never answers (the socket times out); one that refuses first answers at once."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        head = (
            f"POST /v1/judge HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared_bytes}\r\n\r\n"
        )
        conn.sendall(head.encode())
        status_line = conn.makefile("rb").readline().decode()  # socket.timeout if it waits for the body
        return int(status_line.split()[1])


def test_requests_past_the_in_flight_cap_are_refused_before_their_body_is_read(tmp_path: Path) -> None:
    """The cap on requests in flight (memory held by bodies): once it is full, a new request gets 429
    without its body being read; probes are never refused."""
    cap = 3
    latency_s = 2.0
    proc = ServiceProcess(tmp_path, fake_latency_s=latency_s, max_requests_in_flight=cap, parse_retries=0)
    proc.start()
    try:

        def one(i: int) -> httpx.Response:
            with httpx.Client(base_url=proc.url, timeout=20) as client:
                return client.post("/v1/judge", json=group(2, group_key=f"c{i}"))

        with ThreadPoolExecutor(max_workers=cap) as pool:
            held = [pool.submit(one, i) for i in range(cap)]
            with httpx.Client(base_url=proc.url, timeout=5) as client:
                deadline = time.monotonic() + 10
                while metric_value(client.get("/metrics").text, "judge_groups_in_flight") < cap:
                    assert time.monotonic() < deadline, "the cap never filled"
                    time.sleep(0.02)
                # The cap is full (cap requests being judged, each for latency_s): now the probe.
                assert refusal_without_sending_the_body(proc.port, declared_bytes=1_000_000) == 429
                refused = client.post("/v1/judge", json=group(2, group_key="late"))
                assert client.get("/readyz").status_code == 200
                assert client.get("/metrics").status_code == 200
                # Still full: the refusals came while the cap was held, not after a request finished.
                assert metric_value(client.get("/metrics").text, "judge_groups_in_flight") == cap
            responses = [f.result() for f in held]

        assert [r.status_code for r in responses] == [200] * cap
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
        error = refused.json()["error"]
        assert error["code"] == "overloaded" and error["details"] == {"limit": cap}
        assert "JUDGE_MAX_REQUESTS_IN_FLIGHT" in error["message"]
        with httpx.Client(base_url=proc.url, timeout=10) as client:
            assert client.post("/v1/judge", json=group(1)).status_code == 200  # the cap frees up
            text = client.get("/metrics").text
            assert 'judge_requests_total{endpoint="/v1/judge",key="",status="429"} 2.0' in text
    finally:
        proc.stop()
