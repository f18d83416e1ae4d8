"""The auditor at work (watch/auditor.py), with the fake judge as the audit judge and a real SQLite store:
it waits while the training judge has no free slot, keeps its backlog bounded, and feeds each run's onset
detector, seeded from the store the first time it sees a run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from judge_service.backends.fake import FakeBackend
from judge_service.backends.readiness import Readiness
from judge_service.config import Settings
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.judge import LLMJudge
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import StoredJudgement
from judge_service.store.sqlite import SqliteJudgementStore
from judge_service.watch.audit_judge import AuditJudge
from judge_service.watch.auditor import Auditor
from tests.store.samples import make_judgement


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteJudgementStore]:
    opened = SqliteJudgementStore(tmp_path / "audits.sqlite3")
    await opened.open()
    yield opened
    await opened.close()


def audit_judge(metrics: JudgeMetrics) -> AuditJudge:
    settings = Settings(backend="fake")
    readiness = Readiness(metrics, backend="fake")
    readiness.set_ready()
    caller = JudgeCaller.configured(FakeBackend(), metrics, settings, settings)
    return AuditJudge("audit", LLMJudge(caller, admission=None, metrics=metrics, readiness=readiness), None)


def counted(metrics: JudgeMetrics, outcome: str) -> float:
    value = metrics.registry.get_sample_value("judge_audit_groups_total", {"outcome": outcome})
    return 0.0 if value is None else value


async def until(check: object, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_the_audit_waits_while_training_groups_hold_every_slot(store: SqliteJudgementStore) -> None:
    metrics = JudgeMetrics()
    busy = [True]
    auditor = Auditor(
        audit_judge(metrics), store, metrics, rate=1.0, backlog=4, concurrency=1, busy=lambda: busy[0]
    )
    auditor.start()
    try:
        judgement = make_judgement("waits")
        await store.save(judgement)
        auditor.offer(judgement)
        await asyncio.sleep(0.5)
        assert counted(metrics, "audited") == 0 and await store.audit_of("waits") is None
        busy[0] = False
        await until(lambda: counted(metrics, "audited") == 1)
        record = await store.audit_of("waits")
        assert record is not None and record.run_id == "run-a" and record.step == 3
        # The sample's unscored answer has no training score: it counts in no figure.
        assert [a.training is None for a in record.answers] == [a.score is None for a in judgement.answers]
    finally:
        await auditor.close()


async def test_a_full_backlog_drops_and_closing_drops_what_waits(store: SqliteJudgementStore) -> None:
    metrics = JudgeMetrics()
    auditor = Auditor(
        audit_judge(metrics), store, metrics, rate=1.0, backlog=2, concurrency=1, busy=lambda: True
    )
    auditor.start()
    for i in range(5):
        auditor.offer(make_judgement(f"j{i}"))
    assert counted(metrics, "dropped") == 3  # offered on the spot, never waited for: two fit
    await asyncio.sleep(0.1)  # the worker takes one and waits on the busy judge
    assert metrics.registry.get_sample_value("judge_audit_backlog") == 1
    await auditor.close()
    assert counted(metrics, "dropped") == 5  # the one waiting and the one being audited
    assert metrics.registry.get_sample_value("judge_audit_backlog") == 0


async def test_groups_without_a_run_step_regrades_and_failed_groups_are_not_drawn(
    store: SqliteJudgementStore,
) -> None:
    metrics = JudgeMetrics()
    auditor = Auditor(
        audit_judge(metrics), store, metrics, rate=1.0, backlog=8, concurrency=1, busy=lambda: True
    )
    for judgement in (
        make_judgement("no-run", run_id=None),
        make_judgement("no-step", step=None),
        make_judgement("regrade").model_copy(update={"regrade_of": "jdg-0001"}),
        make_judgement("failed").model_copy(update={"status": "failed"}),
        make_judgement("rules-only").model_copy(update={"judge_model": None}),
        _scaled(make_judgement("blend-of-two"), 2.0),  # a blend with weights 1 and 1: scores up to 2
    ):
        auditor.offer(judgement)
    assert metrics.registry.get_sample_value("judge_audit_backlog") in (None, 0.0)
    auditor.offer(make_judgement("drawn"))
    assert metrics.registry.get_sample_value("judge_audit_backlog") == 1
    await auditor.close()


def _scaled(judgement: StoredJudgement, factor: float) -> StoredJudgement:
    answers = [
        a.model_copy(update={"score": None if a.score is None else max(a.score, 0.6) * factor})
        for a in judgement.answers
    ]
    return judgement.model_copy(update={"answers": answers})
