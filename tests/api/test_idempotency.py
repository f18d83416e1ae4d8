"""Idempotency-Key on POST /v1/judge and /v1/judge/batch: retries get the stored judgement, never a
second judge call; with API keys on, each API key has keys of its own."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from judge_service.api.middleware.keys import key_identity as caller_identity
from judge_service.app import create_app
from judge_service.backends.base import Generation, GenerationRequest
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
from judge_service.errors import JudgeBackendError
from judge_service.schemas import JudgeRequest, StoredJudgement, Timings, Usage
from judge_service.service.idempotency import ScopedKey, request_hash
from judge_service.store.base import IdempotencyKey
from judge_service.store.migrations import MIGRATIONS, SQLITE
from judge_service.store.sqlite import SqliteJudgementStore
from tests.api.conftest import group, make_client, wait_ready


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


def replays(client: TestClient) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("judge_idempotent_replays_total "):
            return float(line.split()[1])
    raise KeyError("judge_idempotent_replays_total")


def test_retry_with_the_same_key_returns_the_stored_judgement(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    first = client.post("/v1/judge", json=group(3, run_id="r1"), headers=key("k-1"))
    assert first.status_code == 200
    calls = len(fake_backend.requests)
    again = client.post("/v1/judge", json=group(3, run_id="r1"), headers=key("k-1"))
    assert again.status_code == 200
    assert again.json() == first.json()
    assert len(fake_backend.requests) == calls, "the judge was called again"
    assert replays(client) == 1
    page = client.get("/v1/runs/r1/judgements").json()
    assert [i["judgement_id"] for i in page["items"]] == [first.json()["judgement_id"]]


def test_the_same_request_in_another_json_layout_is_the_same_request(client: TestClient) -> None:
    body = group(2, step=4)
    first = client.post("/v1/judge", json=body, headers=key("layout"))
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2).encode()
    again = client.post(
        "/v1/judge", content=reordered, headers=key("layout") | {"content-type": "application/json"}
    )
    assert again.json()["judgement_id"] == first.json()["judgement_id"]


def test_fields_sent_at_their_defaults_are_the_same_request() -> None:
    plain = JudgeRequest.model_validate(group(2))
    spelled_out = JudgeRequest.model_validate(
        group(2, jury=None, cascade=None, comparison=None, decoding=None, run_id=None, seed=None)
    )
    assert request_hash(spelled_out) == request_hash(plain)
    assert request_hash(JudgeRequest.model_validate(group(2, seed=1))) != request_hash(plain)


async def test_a_judgement_stored_under_an_older_hash_replays_the_same_request(tmp_path: Path) -> None:
    """As a release that hashed requests with every field (and knew fewer fields) left it: the stored hash
    matches nothing this release computes, yet the same request replays, and another one is still a 409."""
    request = JudgeRequest.model_validate(group(2, run_id="upgrade"))
    store = SqliteJudgementStore(tmp_path / "judgements.sqlite3")
    await store.open()
    try:
        await store.save(stored("a" * 32, request), idempotency=IdempotencyKey("before-upgrade", "0" * 64))
    finally:
        await store.close()
    backend = FakeBackend()
    with make_client(tmp_path, backend) as c:
        wait_ready(c)
        again = c.post("/v1/judge", json=group(2, run_id="upgrade"), headers=key("before-upgrade"))
        assert again.status_code == 200 and again.json()["judgement_id"] == "a" * 32
        assert backend.requests == []  # replayed, not judged
        other = c.post("/v1/judge", json=group(3, run_id="upgrade"), headers=key("before-upgrade"))
        assert other.status_code == 409


def test_the_same_key_with_another_request_is_409(client: TestClient) -> None:
    first = client.post("/v1/judge", json=group(2), headers=key("k-2")).json()
    response = client.post("/v1/judge", json=group(3), headers=key("k-2"))
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "conflict"
    assert "'k-2'" in error["message"] and first["judgement_id"] in error["message"]
    assert "use a new key" in error["message"]
    assert error["details"] == {"judgement_id": first["judgement_id"]}


def test_without_a_key_every_request_is_judged(client: TestClient, fake_backend: FakeBackend) -> None:
    a = client.post("/v1/judge", json=group(2)).json()
    b = client.post("/v1/judge", json=group(2)).json()
    assert a["judgement_id"] != b["judgement_id"]
    assert len(fake_backend.requests) == 2


@pytest.mark.parametrize("bad", ["has space", "x" * 256, "caf\u00e9", ""])
def test_malformed_keys_are_422(client: TestClient, bad: str) -> None:
    response = client.post("/v1/judge", json=group(1), headers={"Idempotency-Key": bad.encode()})
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["error"]["message"]


def test_a_failed_attempt_is_not_stored_so_the_retry_is_judged(tmp_path: Path) -> None:
    backend = FakeBackend(script=[JudgeBackendError("endpoint down"), json.dumps({})])
    with make_client(tmp_path, backend, parse_retries=0) as c:
        wait_ready(c)
        assert c.post("/v1/judge", json=group(1), headers=key("k-3")).status_code == 502
        retried = c.post("/v1/judge", json=group(1), headers=key("k-3"))
        assert retried.status_code == 200
        assert len(backend.requests) == 2


async def test_concurrent_duplicates_are_judged_once(tmp_path: Path) -> None:
    backend = FakeBackend(latency_s=0.3)
    app = create_app(Settings(backend="fake", home_dir=tmp_path), backend=backend)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://judge.test") as client:
            for _ in range(500):
                if (await client.get("/readyz")).status_code == 200:
                    break
                await asyncio.sleep(0.01)
            same = [client.post("/v1/judge", json=group(2), headers=key("dup")) for _ in range(5)]
            other = client.post("/v1/judge", json=group(4), headers=key("dup"))
            *responses, conflict = await asyncio.gather(*same, other)
    assert [r.status_code for r in responses] == [200] * 5
    assert len({r.json()["judgement_id"] for r in responses}) == 1
    assert len(backend.requests) == 1
    assert conflict.status_code == 409 and "still being judged" in conflict.json()["error"]["message"]


def test_two_processes_racing_on_one_key_store_one_judgement(tmp_path: Path) -> None:
    """Two services on one database (as two worker processes): the first claims the key, the other waits
    for its judgement."""
    db = tmp_path / "shared.sqlite3"
    backends = [FakeBackend(latency_s=0.3), FakeBackend(latency_s=0.3)]
    clients = [make_client(tmp_path / f"w{i}", b, db_path=db) for i, b in enumerate(backends)]
    with clients[0] as c0, clients[1] as c1:
        wait_ready(c0)
        wait_ready(c1)
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(c.post, "/v1/judge", json=group(2), headers=key("race")) for c in (c0, c1)]
            responses = [f.result() for f in futures]
    assert [r.status_code for r in responses] == [200, 200]
    assert responses[0].json()["judgement_id"] == responses[1].json()["judgement_id"]
    assert sum(len(b.requests) for b in backends) == 1
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT count(*) FROM judgements WHERE idempotency_key = 'race'").fetchone()
    assert rows == (1,)


def hold_claim(db: Path, key_value: str, request_hash: str, *, lease_s: float) -> None:
    """A claim as another process (one that crashed, or is still judging) would have left it."""
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO idempotency_claims VALUES (?, ?, 'other-process', "
            "(julianday('now') - 2440587.5) * 86400.0 + ?)",
            (key_value, request_hash, lease_s),
        )


def test_a_key_held_by_a_crashed_process_is_taken_over_when_its_lease_lapses(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    backend = FakeBackend()
    with make_client(tmp_path, backend, db_path=db) as c:
        wait_ready(c)
        digest = request_hash(JudgeRequest.model_validate(group(2)))
        hold_claim(db, "lapsing", digest, lease_s=0.6)
        started = time.monotonic()
        response = c.post("/v1/judge", json=group(2), headers=key("lapsing"))
        waited = time.monotonic() - started
    assert response.status_code == 200
    assert len(backend.requests) == 1
    assert waited >= 0.5  # it waited for the lease instead of judging beside a live holder


def test_a_key_held_elsewhere_for_another_request_is_409(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    backend = FakeBackend()
    with make_client(tmp_path, backend, db_path=db) as c:
        wait_ready(c)
        hold_claim(db, "held", "another-request", lease_s=60)
        response = c.post("/v1/judge", json=group(2), headers=key("held"))
    assert response.status_code == 409
    assert "still being judged" in response.json()["error"]["message"]
    assert backend.requests == []


def test_when_the_holder_fails_the_waiting_duplicate_judges(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    failing = FakeBackend(script=[JudgeBackendError("endpoint down")], latency_s=0.3)
    working = FakeBackend()
    with (
        make_client(tmp_path / "a", failing, db_path=db, parse_retries=0) as a,
        make_client(tmp_path / "b", working, db_path=db) as b,
    ):
        wait_ready(a)
        wait_ready(b)
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(a.post, "/v1/judge", json=group(2), headers=key("fails"))
            time.sleep(0.1)  # a holds the key now
            second = pool.submit(b.post, "/v1/judge", json=group(2), headers=key("fails"))
            assert first.result().status_code == 502
            assert second.result().status_code == 200
    assert len(working.requests) == 1  # released at once: b did not wait for a lease to lapse


# --------------------------------------------------------------------------- batches


def batch(*groups: dict[str, object]) -> dict[str, object]:
    return {"groups": list(groups)}


def judgement_ids(response: httpx.Response) -> list[str | None]:
    assert response.status_code == 200, response.text
    return [(item["judgement"] or {}).get("judgement_id") for item in response.json()["results"]]


class FailsOnce(FakeBackend):
    """The first judge call for the group whose prompt holds `marker` fails; every other call answers."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self._marker: str | None = marker

    async def generate(self, request: GenerationRequest) -> Generation:
        if self._marker and any(self._marker in m["content"] for m in request.messages):
            self._marker = None
            self.requests.append(request)
            raise JudgeBackendError("endpoint down")
        return await super().generate(request)


def test_a_retried_batch_replays_its_stored_groups(client: TestClient, fake_backend: FakeBackend) -> None:
    body = batch(group(2, run_id="b1"), group(3, run_id="b1"), group(2, run_id="b1"))
    first = judgement_ids(client.post("/v1/judge/batch", json=body, headers=key("step-7")))
    assert len(set(first)) == 3, "identical groups at different indexes are judged apart"
    calls = len(fake_backend.requests)
    again = client.post("/v1/judge/batch", json=body, headers=key("step-7"))
    assert judgement_ids(again) == first
    assert len(fake_backend.requests) == calls, "the judge was called again"
    assert replays(client) == 3
    page = client.get("/v1/runs/b1/judgements").json()
    assert sorted(i["judgement_id"] for i in page["items"]) == sorted(first)


def test_a_retried_batch_judges_only_the_groups_that_failed(tmp_path: Path) -> None:
    backend = FailsOnce(marker="flaky answer")
    flaky = group(2) | {"answers": [{"id": "a0", "text": "flaky answer"}, {"id": "a1", "text": "b"}]}
    body = batch(group(2), flaky, group(3))
    with make_client(tmp_path, backend) as c:
        wait_ready(c)
        first = c.post("/v1/judge/batch", json=body, headers=key("step-8")).json()["results"]
        assert [r["error"]["code"] if r["error"] else "ok" for r in first] == [
            "ok",
            "judge_unavailable",
            "ok",
        ]
        assert len(backend.requests) == 3
        retried = judgement_ids(c.post("/v1/judge/batch", json=body, headers=key("step-8")))
        assert len(backend.requests) == 4, "only the failed group is judged again"
        assert retried[0] == first[0]["judgement"]["judgement_id"]
        assert retried[2] == first[2]["judgement"]["judgement_id"]
        assert retried[1] is not None
        assert replays(c) == 2


def test_a_changed_group_in_a_retried_batch_is_a_409_for_that_group_alone(
    client: TestClient, fake_backend: FakeBackend
) -> None:
    first = judgement_ids(client.post("/v1/judge/batch", json=batch(group(2), group(3)), headers=key("k-b")))
    calls = len(fake_backend.requests)
    changed = client.post("/v1/judge/batch", json=batch(group(2), group(4), group(1)), headers=key("k-b"))
    assert changed.status_code == 200
    results = changed.json()["results"]
    assert results[0]["judgement"]["judgement_id"] == first[0]
    assert results[1]["judgement"] is None
    assert results[1]["error"]["code"] == "conflict"
    assert "'k-b' (batch group 1)" in results[1]["error"]["message"]
    assert first[1] in results[1]["error"]["message"]
    assert results[1]["error"]["details"]["judgement_id"] == first[1]  # as a single request's 409 has
    assert results[2]["judgement"] is not None, "an index the first batch lacked is judged"
    assert len(fake_backend.requests) == calls + 1


def test_batch_keys_and_single_request_keys_do_not_meet(client: TestClient) -> None:
    single = client.post("/v1/judge", json=group(2), headers=key("shared")).json()["judgement_id"]
    [in_batch] = judgement_ids(client.post("/v1/judge/batch", json=batch(group(2)), headers=key("shared")))
    assert in_batch != single
    assert client.post("/v1/judge", json=group(2), headers=key("shared")).json()["judgement_id"] == single


def test_scoped_keys_are_distinct_and_unqualified_keys_stay_as_they_were() -> None:
    assert ScopedKey("k").stored == "k"
    forms = {
        ScopedKey(k, caller, group).stored
        for k in ("k", "group=0", "caller=ab", "ab")
        for caller in (None, "ab")
        for group in (None, 0)
    }
    assert len(forms) == 16


# --------------------------------------------------------------------------- API keys

API_KEYS = ["tenant-one-secret-0123456789", "tenant-two-secret-abcdefghij"]


def as_tenant(api_key: str, idempotency_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} | key(idempotency_key)


def test_each_api_key_has_idempotency_keys_of_its_own(tmp_path: Path) -> None:
    backend = FakeBackend()
    with make_client(tmp_path, backend, api_keys=",".join(API_KEYS)) as c:
        wait_ready(c)
        one = c.post("/v1/judge", json=group(2), headers=as_tenant(API_KEYS[0], "step-1"))
        two = c.post("/v1/judge", json=group(3), headers=as_tenant(API_KEYS[1], "step-1"))
        assert one.status_code == two.status_code == 200, "another tenant's key is no conflict"
        assert one.json()["judgement_id"] != two.json()["judgement_id"]
        calls = len(backend.requests)
        again = c.post("/v1/judge", json=group(2), headers=as_tenant(API_KEYS[0], "step-1"))
        assert again.json()["judgement_id"] == one.json()["judgement_id"]
        batches = [
            judgement_ids(c.post("/v1/judge/batch", json=batch(group(2)), headers=as_tenant(k, "b")))
            for k in (*API_KEYS, API_KEYS[0])
        ]
        assert batches[0] != batches[1] and batches[2] == batches[0]
        assert len(backend.requests) == calls + 2
    with sqlite3.connect(tmp_path / "judgements.sqlite3") as conn:
        stored_keys = {row[0] for row in conn.execute("SELECT idempotency_key FROM judgements")}
    one_id, two_id = (caller_identity(k) for k in API_KEYS)
    assert stored_keys == {
        f"caller={one_id} step-1",
        f"caller={two_id} step-1",
        f"caller={one_id} group=0 b",
        f"caller={two_id} group=0 b",
    }


def test_the_api_key_itself_is_never_stored(tmp_path: Path) -> None:
    with make_client(tmp_path, FakeBackend(), api_keys=API_KEYS[0]) as c:
        wait_ready(c)
        assert c.post("/v1/judge", json=group(2), headers=as_tenant(API_KEYS[0], "k")).status_code == 200
    db = tmp_path / "judgements.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        dump = "\n".join(conn.iterdump())
    conn.close()
    assert API_KEYS[0] not in dump
    for path in tmp_path.glob("judgements.sqlite3*"):
        assert API_KEYS[0].encode() not in path.read_bytes()


# --------------------------------------------------------------------------- the store


def stored(judgement_id: str, request: JudgeRequest) -> StoredJudgement:
    return StoredJudgement(
        judgement_id=judgement_id,
        created_at=datetime.now(UTC),
        status="ok",
        grader="judge",
        judge_model="m",
        prompt_version="p",
        run_id=None,
        step=None,
        group_key=None,
        answers=[],
        usage=Usage(),
        timings=Timings(),
        attempts=1,
        request=request,
        raw_outputs=[],
    )


async def test_migration_adds_the_key_to_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    request = JudgeRequest.model_validate(group(1))
    # A database as the first release left it: schema version 1, one judgement.
    with sqlite3.connect(path) as conn:
        conn.executescript(MIGRATIONS[0].script(SQLITE))
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO judgements (judgement_id, created_at, grader, status, doc) VALUES (?, ?, ?, ?, ?)",
            (
                "e" * 32,
                datetime.now(UTC).isoformat(),
                "judge",
                "ok",
                stored("e" * 32, request).model_dump_json(),
            ),
        )
    conn.close()

    store = SqliteJudgementStore(path)
    await store.open()
    try:
        assert (await store.get("e" * 32)) is not None
        await store.save(stored("f" * 32, request), idempotency=IdempotencyKey("new", "h"))
        found = await store.get_by_idempotency_key("new")
        assert found is not None and found.judgement.judgement_id == "f" * 32
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
