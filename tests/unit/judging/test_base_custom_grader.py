"""The Grader interface takes graders the service has never seen: a group-relative grader (it ranks the
answers against each other) registered beside the LLM judge, blended with it by custom terms, stored and
fingerprinted like the built-in ones, with no special case anywhere."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from judge_service.backends.fake import FakeBackend
from judge_service.backends.readiness import Readiness
from judge_service.config import PACKAGED_PROMPTS, JudgingSettings, ThinkingSettings
from judge_service.judging.base import AnswerGrade, Group, GroupGrades
from judge_service.judging.llm.admission import GroupAdmission
from judge_service.judging.llm.caller import JudgeCaller
from judge_service.judging.llm.judge import LLMJudge
from judge_service.judging.llm.prompt import PromptRenderer
from judge_service.judging.registry import GraderRegistry
from judge_service.metrics import JudgeMetrics
from judge_service.schemas import JudgeRequest
from judge_service.service import JudgeService
from judge_service.store.sqlite import SqliteJudgementStore


class ShortestFirst:
    """Group-relative: the shortest answer scores 1, the longest 0, evenly between (ties share)."""

    name = "shortest-first"
    runs_model = False

    def __init__(self, version: int = 1) -> None:
        self.version = version

    def options(self, request: JudgeRequest) -> None:
        return None

    def config(self, options: None) -> Mapping[str, Any]:
        return {"shortest_first": {"version": self.version}}

    async def grade(self, group: Group, options: None) -> GroupGrades:
        lengths = sorted({len(a.text) for a in group.answers})
        top = max(len(lengths) - 1, 1)
        return GroupGrades(
            {
                a.id: AnswerGrade(1 - lengths.index(len(a.text)) / top, f"{len(a.text)} characters")
                for a in group.answers
            }
        )


def llm_judge(metrics: JudgeMetrics) -> LLMJudge:
    caller = JudgeCaller(
        FakeBackend(),
        PromptRenderer(PACKAGED_PROMPTS, "judge_group"),
        metrics,
        JudgingSettings(),
        ThinkingSettings(),
    )
    readiness = Readiness(metrics, backend="fake")
    readiness.set_ready()
    return LLMJudge(caller, admission=GroupAdmission(4, 4, metrics), metrics=metrics, readiness=readiness)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteJudgementStore]:
    s = SqliteJudgementStore(tmp_path / "j.sqlite3")
    await s.open()
    yield s
    await s.close()


def service(store: SqliteJudgementStore, version: int = 1) -> JudgeService:
    metrics = JudgeMetrics()
    registry = GraderRegistry.with_rule_graders(llm_judge(metrics), ShortestFirst(version))
    return JudgeService(graders=registry, store=store, metrics=metrics)


REQUEST = JudgeRequest.model_validate(
    {
        "conversation": [{"role": "user", "content": "How do I share the report?"}],
        "reference": "Click Share.",
        "answers": [{"id": "long", "text": "Open it, then click Share."}, {"id": "short", "text": "Share."}],
        "terms": [{"grader": "judge", "weight": 0.5}, {"grader": "shortest-first", "weight": 0.5}],
    }
)


async def test_a_group_relative_grader_blends_with_the_judge(store: SqliteJudgementStore) -> None:
    reply = await service(store).grade(REQUEST)
    by_id = {a.id: a for a in reply.answers}
    for answer_id, rank_score in (("long", 0.0), ("short", 1.0)):
        answer = by_id[answer_id]
        assert answer.terms is not None and [t.grader for t in answer.terms] == ["judge", "shortest-first"]
        judge_score, rank = answer.terms[0].score, answer.terms[1]
        assert judge_score is not None and rank.score == rank_score
        assert answer.score == pytest.approx(0.5 * judge_score + 0.5 * rank_score)
        assert answer.criteria is not None  # the judge's marks stay beside the blend
    stored = await store.get(reply.judgement_id)
    assert stored is not None and stored.grader == "custom" and stored.judge_model == "fake-judge"


async def test_the_new_graders_config_is_part_of_the_fingerprint(store: SqliteJudgementStore) -> None:
    first = await service(store, version=1).grade(REQUEST)
    again = await service(store, version=1).grade(REQUEST)
    changed = await service(store, version=2).grade(REQUEST)
    assert first.grader_fingerprint == again.grader_fingerprint != changed.grader_fingerprint


async def test_alone_it_needs_no_judge(store: SqliteJudgementStore) -> None:
    alone = REQUEST.model_copy(update={"terms": None, "grader": "shortest-first"})
    reply = await service(store).grade(alone)
    assert [a.score for a in reply.answers] == [0.0, 1.0]
    assert reply.judge_model is None and reply.attempts == 0
