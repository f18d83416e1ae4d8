"""Three real service processes sharing one PostgreSQL database, with load from a process of its own:
a replica killed with SIGKILL loses no acknowledged judgement, retries reach the stored judgement through
another replica, and duplicates sent to every replica at once are judged once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.postgres_server import ThrowawayCluster, fresh_database, run_migrate
from tests.scaleout.load import body
from tests.service_process import REPO, ServiceProcess, metric_value

LEASE_S = 2.0


def migrate(database_url: str) -> None:
    done = run_migrate(database_url)
    assert done.returncode == 0, done.stderr


def start_replicas(tmp_path: Path, database_url: str, count: int, **settings: Any) -> list[ServiceProcess]:
    replicas = []
    for i in range(count):
        workdir = tmp_path / f"replica-{i}"
        workdir.mkdir()
        replica = ServiceProcess(
            workdir,
            database_url=database_url,
            fake_latency_s=0.1,
            idempotency_lease_s=LEASE_S,
            **settings,
        )
        replicas.append(replica.start())
    return replicas


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[list[ServiceProcess]]:
    migrate(postgres_url)
    started = start_replicas(tmp_path, postgres_url, 3)
    yield started
    for replica in started:
        replica.stop()


def stored(database_url: str) -> dict[str, str]:
    """Idempotency key -> judgement id of every stored judgement; asserts one row per key."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT idempotency_key, judgement_id FROM judgements").fetchall()
    keys = Counter(key for key, _ in rows)
    assert max(keys.values(), default=1) == 1, "a key was stored twice"
    return {key: judgement_id for key, judgement_id in rows}


def run_load(urls: list[str], out: Path, requests: int, concurrency: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.scaleout.load",
            "--urls",
            ",".join(urls),
            "--requests",
            str(requests),
            "--concurrency",
            str(concurrency),
            "--out",
            str(out),
        ],
        cwd=REPO,
    )


def replies(replica: ServiceProcess) -> float:
    return metric_value(httpx.get(f"{replica.url}/metrics").text, "judge_replies_total")


def test_a_replica_killed_under_load_loses_no_acknowledged_judgement(
    replicas: list[ServiceProcess], postgres_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "load.json"
    load = run_load([r.url for r in replicas], out, requests=240, concurrency=12)
    deadline = time.monotonic() + 30
    while replies(replicas[0]) < 10:  # mid-load: the victim has judged and holds groups in flight
        assert time.monotonic() < deadline, "the load never reached the first replica"
        time.sleep(0.05)
    os.kill(replicas[0].pid, signal.SIGKILL)
    assert load.wait(timeout=120) == 0
    results = json.loads(out.read_text())

    acknowledged = {r["key"]: r["judgement_id"] for r in results if r["status"] == 200}
    found = stored(postgres_url)
    missing = {k: v for k, v in acknowledged.items() if found.get(k) != v}
    assert missing == {}, f"{len(missing)} of {len(acknowledged)} acknowledged judgements are not stored"
    failed = [r for r in results if r["status"] != 200]
    assert failed, "the kill failed no request: the test did not kill mid-load"
    assert {r["url"] for r in failed} == {replicas[0].url}  # only the killed replica's requests failed

    # The trainer retries each failed request, same key, through another replica.
    survivors = [replicas[1].url, replicas[2].url]
    with httpx.Client(timeout=30) as client:
        for n, failure in enumerate(failed):
            i = int(failure["key"].rsplit("-", 1)[1])
            before = found.get(failure["key"])
            retried = client.post(
                f"{survivors[n % 2]}/v1/judge",
                json=body(i, "load"),
                headers={"Idempotency-Key": failure["key"]},
            )
            assert retried.status_code == 200, retried.text
            if before is not None:  # stored before the kill, unacknowledged: the retry gets that judgement
                assert retried.json()["judgement_id"] == before
    after = stored(postgres_url)
    assert set(after) == {r["key"] for r in results}  # every request stored exactly once
    print(
        f"\nkill -9 under load: {len(results)} requests, {len(acknowledged)} acknowledged, "
        f"{len(acknowledged) - len(missing)} of them found; {len(failed)} failed and were retried, "
        f"{sum(1 for f in failed if f['key'] in found)} of those had been stored before the kill"
    )


def test_duplicates_sent_to_every_replica_at_once_are_judged_once(
    replicas: list[ServiceProcess], postgres_url: str
) -> None:
    before = sum(replies(r) for r in replicas)
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(15) as pool:
        futures = {
            (i, replica.url): pool.submit(
                client.post,
                f"{replica.url}/v1/judge",
                json=body(i, "dup"),
                headers={"Idempotency-Key": f"dup-{i}"},
            )
            for i in range(5)
            for replica in replicas
        }
        responses = {where: f.result() for where, f in futures.items()}
    assert {r.status_code for r in responses.values()} == {200}
    for i in range(5):
        ids = {responses[(i, r.url)].json()["judgement_id"] for r in replicas}
        assert len(ids) == 1, f"group {i} got {len(ids)} judgements"
    assert sum(replies(r) for r in replicas) - before == 5  # one judge call per group, fleet-wide
    assert len(stored(postgres_url)) == 5


def test_while_postgres_is_down_requests_get_503_and_the_replicas_recover(tmp_path: Path) -> None:
    cluster = ThrowawayCluster()
    started: list[ServiceProcess] = []
    try:
        with fresh_database(cluster.url) as url:
            migrate(url)
            started = start_replicas(tmp_path, url, 2, database_timeout_s=1)
            outcomes: list[tuple[str, int, str | None, float, int]] = []
            phase = "before"
            stop_at = time.monotonic() + 60

            def load() -> None:
                i = 0
                with httpx.Client(timeout=30) as client:
                    while phase != "done" and time.monotonic() < stop_at:
                        i += 1
                        began, during = time.monotonic(), phase
                        response = client.post(
                            f"{started[i % 2].url}/v1/judge",
                            json=body(i, "outage"),
                            headers={"Idempotency-Key": f"outage-{i}"},
                        )
                        took = time.monotonic() - began
                        retry_after = response.headers.get("retry-after")
                        outcomes.append((during, response.status_code, retry_after, took, i % 2))

            with ThreadPoolExecutor(4) as pool:
                loads = [pool.submit(load) for _ in range(4)]
                time.sleep(1.0)
                phase = "down"
                cluster.crash()
                time.sleep(3.0)
                phase = "restarting"
                cluster.start()
                deadline = time.monotonic() + 30
                # Recovered: a request begun after the restart succeeded on each replica.
                while {r for p, s, _, _, r in outcomes if p == "restarting" and s == 200} != {0, 1}:
                    assert time.monotonic() < deadline, "the replicas did not recover"
                    time.sleep(0.1)
                phase = "after"
                time.sleep(1.0)
                phase = "done"
                for f in loads:
                    f.result()
    finally:
        for replica in started:
            replica.stop()
        cluster.stop()

    statuses = Counter((p, s) for p, s, *_ in outcomes)
    assert {s for _, s, *_ in outcomes} <= {200, 503}, statuses  # never a 500
    assert statuses[("before", 200)] > 0 and statuses[("after", 200)] > 0
    unavailable = [o for o in outcomes if o[1] == 503]
    assert statuses[("down", 503)] > 0, "no request met the outage"
    assert all(retry_after is not None and int(retry_after) >= 1 for _, _, retry_after, *_ in unavailable)
    assert max(o[3] for o in unavailable) < 10  # answered, not hung
    assert statuses[("after", 503)] == 0, statuses


def member(group: int, answer: int, size: int = 4, **extra: Any) -> dict[str, Any]:
    return {
        "group_key": f"prompt-{group}",
        "group_size": size,
        "answer": {"id": f"a{answer}", "text": f"Answer {answer} to prompt {group}"},
        "conversation": [{"role": "user", "content": f"Prompt {group}: how do I share the report?"}],
        "reference": "Click Share.",
        "run_id": "members",
        **extra,
    }


def test_members_of_a_group_spread_over_replicas_are_judged_together_once(
    replicas: list[ServiceProcess], postgres_url: str
) -> None:
    before = sum(replies(r) for r in replicas)
    sends = [(g, a, replicas[(g + a) % 3].url, member(g, a)) for g in range(6) for a in range(4)]
    # Group 6 never fills: three of four members, judged together at the deadline.
    sends += [(6, a, replicas[a].url, member(6, a, deadline_s=1.0)) for a in range(3)]
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(len(sends)) as pool:
        futures = [
            (g, a, pool.submit(client.post, f"{url}/v1/judge/member", json=b)) for g, a, url, b in sends
        ]
        answers = [(g, a, f.result()) for g, a, f in futures]
    assert {r.status_code for _, _, r in answers} == {200}, [
        r.text for *_, r in answers if r.status_code != 200
    ]
    for g in range(7):
        bodies = [r.json() for gg, _, r in answers if gg == g]
        assert len({b["judgement_id"] for b in bodies}) == 1, f"group {g} was judged more than once"
        assert {b["members"] for b in bodies} == {3 if g == 6 else 4}
        assert {b["closed_by"] for b in bodies} == {"deadline" if g == 6 else "size"}
    assert sum(replies(r) for r in replicas) - before == 7  # one judge call per group, fleet-wide
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT count(*) FROM judgements WHERE run_id = 'members'").fetchone()
    assert row == (7,)
