"""JUDGE_WORKERS: several worker processes on one port, metrics added up over all of them."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from judge_service.config import Settings
from tests.scaleout.load import body
from tests.service_process import ServiceProcess, metric_value


def test_two_workers_share_the_port_and_their_metrics_add_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics_dir = tmp_path / "metrics"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics_dir))
    metrics_dir.mkdir()
    (metrics_dir / "counter_1.db").write_bytes(b"stale")  # an earlier run's file is cleared, not summed
    service = ServiceProcess(tmp_path, workers=2, fake_latency_s=0.05).start()
    try:
        with httpx.Client(timeout=30) as client, ThreadPoolExecutor(8) as pool:
            sent = list(pool.map(lambda i: post_retrying(client, service.url, body(i, "w")), range(40)))
            assert {r.status_code for r in sent} == {200}, [r.text for r in sent if r.status_code != 200]
            scrapes = [client.get(f"{service.url}/metrics").text for _ in range(6)]
        # Whichever worker answers the scrape, it reports every worker's groups.
        for text in scrapes:
            assert metric_value(text, "judge_replies_total") == 40
            assert 'judge_groups_total{grader="judge",status="ok"} 40.0' in text
            assert metric_value(text, "judge_groups_in_flight") == 0
        writers = {p.name.rsplit("_", 1)[1] for p in metrics_dir.glob("counter_*.db")}
        assert len(writers) == 2, f"requests reached {len(writers)} worker(s)"
        assert "1.db" not in writers
    finally:
        service.stop()


def post_retrying(client: httpx.Client, url: str, group: dict[str, object]) -> httpx.Response:
    """POST a group as a client should: a 503 is retryable (the service's contract), so one is sent again,
    at most twice. Only stored judgements are counted in the metrics, so the totals stay exact."""
    for _ in range(2):
        response = client.post(f"{url}/v1/judge", json=group)
        if response.status_code != 503:
            return response
        print("retried after 503:", response.text)  # shown with the test's output when it fails
        time.sleep(min(float(response.headers.get("Retry-After", "0.5")), 2.0))
    return client.post(f"{url}/v1/judge", json=group)


def test_several_workers_need_a_remote_judge() -> None:
    with pytest.raises(ValidationError, match="JUDGE_WORKERS > 1 needs JUDGE_BACKEND=openai"):
        Settings(backend="vllm", workers=2)
    assert Settings(backend="openai", workers=2).resolved_member_assembly() == "shared"
    assert Settings(backend="openai").resolved_member_assembly() == "local"


def worker_pids(supervisor: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()]


def test_sigterm_drains_every_worker_before_the_replica_exits(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path, workers=2, fake_latency_s=1.5, drain_timeout_s=20).start()
    try:
        with httpx.Client(timeout=30) as client, ThreadPoolExecutor(6) as pool:
            sent = [pool.submit(client.post, f"{service.url}/v1/judge", json=body(i, "w")) for i in range(6)]
            deadline = time.monotonic() + 10
            while metric_value(client.get(f"{service.url}/metrics").text, "judge_groups_in_flight") < 6:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            service.signal(signal.SIGTERM)
            time.sleep(0.3)
            refused = client.post(f"{service.url}/v1/judge", json=body(9, "w"))
            assert refused.status_code == 503 and refused.json()["error"]["code"] == "shutting_down"
            assert {f.result().status_code for f in sent} == {200}
        assert service.wait(20) == 0
    finally:
        service.stop()


def test_a_worker_that_dies_stops_the_replica_for_a_restart(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path, workers=2).start()
    try:
        first, second = worker_pids(service.pid)
        os.kill(first, signal.SIGKILL)
        assert service.wait(30) == 1
        assert not Path(f"/proc/{second}").exists() or "zombie" in Path(f"/proc/{second}/status").read_text()
        assert "a worker exited" in service.log()
    finally:
        service.stop()


def gone(pid: int) -> bool:
    """Exited (a zombie waiting for its new parent counts: it serves nothing)."""
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" in status.read_text()
    except OSError:
        return True


def test_workers_stop_when_their_supervisor_is_killed_outright(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path, workers=2).start()
    try:
        workers = worker_pids(service.pid)
        assert len(workers) == 2
        os.kill(service.pid, signal.SIGKILL)  # the supervisor alone: nothing is passed on to the workers
        service.wait(10)
        deadline = time.monotonic() + 15
        while not all(gone(pid) for pid in workers):
            assert time.monotonic() < deadline, f"workers {workers} still serve without their supervisor"
            time.sleep(0.1)
        with pytest.raises(httpx.TransportError):  # nobody answers on the replica's port any more
            httpx.get(f"{service.url}/readyz", timeout=2)
        assert "is gone; this worker stops" in service.log()
    finally:
        service.stop()


def test_a_code_grader_worker_busy_in_a_hung_grader_stops_when_its_service_is_killed(tmp_path: Path) -> None:
    """An idle code-grader worker sees its pipe close; one stuck in a grader that never returns would spin
    on forever once the service that would time it out is gone: it ends, with what its grader started."""
    spec = [{"name": "hangs", "target": "tests.code_graders:hangs_after_marking", "timeout_s": 60}]
    service = ServiceProcess(tmp_path, code_graders=json.dumps(spec), code_workers=1).start()
    marker = f"{time.time_ns() % 10**6}.41"  # `sleep <marker>`: started by the grader, seen from here
    try:
        (worker,) = worker_pids(service.pid)
        request = {**body(0, "hang"), "grader": "hangs", "item": {"marker": marker}}
        with ThreadPoolExecutor(1) as pool:
            sent = pool.submit(httpx.post, f"{service.url}/v1/judge", json=request, timeout=60)
            deadline = time.monotonic() + 15
            while not _sleeping(marker):
                assert time.monotonic() < deadline and not sent.done(), "the grader never started"
                time.sleep(0.05)
            os.kill(service.pid, signal.SIGKILL)
            service.wait(10)
            deadline = time.monotonic() + 10
            while not gone(worker) or _sleeping(marker):
                assert time.monotonic() < deadline, f"code worker {worker} or its grader outlived its service"
                time.sleep(0.1)
            with pytest.raises(httpx.TransportError):
                sent.result()
    finally:
        service.stop()


def _sleeping(marker: str) -> bool:
    """Whether a process started as `sleep <marker>` is alive on this machine."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                return True
        except OSError:
            continue
    return False
