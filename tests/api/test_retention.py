"""Retention over HTTP and in the background: POST /v1/prune (admin), `judge-service prune`, and
JUDGE_RETENTION_DAYS; the metric of rows pruned; one prune at a time (409)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from judge_service.app import create_app
from judge_service.backends.fake import FakeBackend
from judge_service.config import Settings
from judge_service.schemas import HumanLabels
from judge_service.store.base import IdempotencyKey, JudgementStore
from judge_service.tools.cli import run_command
from judge_service.tools.prune import parse_before
from tests.api.conftest import group
from tests.api.test_regrade_cli import parse
from tests.store.samples import make_judgement

ADMIN, READER = "admin-key-0123456789", "reader-key-0123456789"
SCOPES = ["admin", "read", "judge"]
NOW = datetime.now(UTC)


def _keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    entries = [
        {
            "name": "ops",
            "sha256": hashlib.sha256(ADMIN.encode()).hexdigest(),
            "scopes": ["admin", "read", "judge"],
        },
        {"name": "dash", "sha256": hashlib.sha256(READER.encode()).hexdigest(), "scopes": ["read"]},
    ]
    path.write_text(json.dumps({"keys": entries}))
    return path


@asynccontextmanager
async def serving(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    config = Settings(backend="fake", home_dir=tmp_path, api_keys_file=_keys_file(tmp_path), **settings)
    app = create_app(config, backend=FakeBackend())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://judge", headers=headers) as c:
            yield app, c


async def _old(store: JudgementStore, count: int, days_ago: float, run_id: str = "run-a") -> list[str]:
    ids = []
    for i in range(count):
        judgement = make_judgement(uuid.uuid4().hex, run_id=run_id).model_copy(
            update={"created_at": NOW - timedelta(days=days_ago, seconds=i)}
        )
        await store.save(judgement, idempotency=IdempotencyKey(f"{judgement.judgement_id}-key", "h"))
        ids.append(judgement.judgement_id)
    return ids


async def test_prune_deletes_by_age_keeps_the_labelled_and_counts_what_it_did(tmp_path: Path) -> None:
    async with serving(tmp_path, prune_batch_rows=4) as (app, client):
        store: JudgementStore = app.state.store
        old = await _old(store, 10, days_ago=40)
        recent = await _old(store, 3, days_ago=1)
        labelled = HumanLabels(judgement_id=old[0], labeler="ann", human={"a0": 5.0})
        await store.save_labels(labelled, run_id="run-a")
        cutoff = (NOW - timedelta(days=30)).isoformat()

        refused = await client.post(
            "/v1/prune", json={"before": cutoff}, headers={"Authorization": f"Bearer {READER}"}
        )
        assert refused.status_code == 403 and refused.json()["error"]["details"]["scope"] == "admin"

        first = await client.post("/v1/prune", json={"before": cutoff, "max_judgements": 5})
        assert first.status_code == 200, first.text
        assert first.json() | {"seconds": 0} == {
            "before": first.json()["before"],
            "run_id": None,
            "judgements": 5,
            "explained_reasons": 0,
            "labels": 0,
            "audits": 0,
            "claims": 0,
            "seconds": 0,
            "more": True,
        }
        rest = (await client.post("/v1/prune", json={"before": cutoff})).json()
        assert rest["judgements"] == 4 and rest["more"] is False  # the labelled one stays
        for judgement_id in old[1:]:
            assert (await client.get(f"/v1/judgements/{judgement_id}")).status_code == 404
        for judgement_id in [old[0], *recent]:
            assert (await client.get(f"/v1/judgements/{judgement_id}")).status_code == 200
        metrics = (await client.get("/metrics")).text
        assert 'judge_pruned_rows_total{what="judgements"} 9.0' in metrics

        naive = await client.post("/v1/prune", json={"before": "2026-01-01T00:00:00"})
        assert naive.status_code == 422 and "timezone" in naive.text.lower()


async def test_one_prune_at_a_time_the_other_is_told_to_wait(tmp_path: Path) -> None:
    async with serving(tmp_path) as (app, client):
        async with app.state.store.prune_lock() as held:
            assert held
            busy = await client.post("/v1/prune", json={"before": NOW.isoformat()})
        assert busy.status_code == 409 and "already running" in busy.json()["error"]["message"]
        assert (await client.post("/v1/prune", json={"before": NOW.isoformat()})).status_code == 200


async def test_retention_days_prunes_in_the_background(tmp_path: Path) -> None:
    async with serving(tmp_path, retention_days=7, prune_interval_s=1) as (app, client):
        store: JudgementStore = app.state.store
        old = await _old(store, 3, days_ago=8)
        kept = await _old(store, 2, days_ago=6)
        judged = (await client.post("/v1/judge", json=group(2))).json()["judgement_id"]
        for _ in range(100):
            if await store.get(old[-1]) is None:
                break
            await asyncio.sleep(0.05)
        assert [await store.get(i) for i in old] == [None, None, None]
        assert all([await store.get(i) is not None for i in [*kept, judged]])


async def test_the_prune_command_goes_call_after_call_until_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serving(tmp_path, prune_batch_rows=3) as (app, _):
        store: JudgementStore = app.state.store
        await _old(store, 7, days_ago=40, run_id="run-a")
        others = await _old(store, 2, days_ago=40, run_id="run-b")
        args = parse("prune", "--before", (NOW - timedelta(days=30)).date().isoformat(), "--run", "run-a")
        args.api_key, args.per_call, args.json = ADMIN, 3, True
        assert await run_command(args, httpx.ASGITransport(app=app)) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["judgements"] == 7 and report["run_id"] == "run-a" and report["more"] is False
        assert all([await store.get(i) is not None for i in others])


def test_before_takes_a_date_or_a_time() -> None:
    assert parse_before("2026-11-01") == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_before("2026-11-01T12:30:00+01:00") == datetime(2026, 11, 1, 11, 30, tzinfo=UTC)
    assert parse_before("2026-11-01T12:30") == datetime(2026, 11, 1, 12, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="is not a date"):
        parse_before("last tuesday")
