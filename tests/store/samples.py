"""Sample judgements for store tests: realistic documents with marks, an unscored answer, retries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from judge_service.schemas import (
    Answer,
    AnswerResult,
    ChatMessage,
    Criterion,
    CriterionMark,
    JudgeRequest,
    StoredJudgement,
    Timings,
    Usage,
)

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def make_judgement(
    judgement_id: str = "jdg-0001", *, run_id: str | None = "run-a", step: int | None = 3, n: int = 0
) -> StoredJudgement:
    """A realistic stored judgement: three answers, criteria marks, one unscored answer, two attempts."""
    request = JudgeRequest(
        conversation=[
            ChatMessage(role="system", content="You are a careful maths tutor."),
            ChatMessage(role="user", content="What is 17 * 3? Explain briefly."),
        ],
        reference="17 * 3 = 51, because 17 * 3 = 10 * 3 + 7 * 3 = 30 + 21.",
        answers=[
            Answer(id="a0", text="51. 10*3 + 7*3 = 30 + 21 = 51."),
            Answer(id="a1", text="It is 41."),
            Answer(id="a2", text="¯\\_(ツ)_/¯ — ünïcode"),
        ],
        criteria=[
            Criterion(name="correctness", description="Is it right?", mark_1="wrong", mark_5="right"),
            Criterion(name="tone", description="Is it kind?", mark_1="rude", mark_5="warm", weight=0.5),
        ],
        run_id=run_id,
        step=step,
        group_key="prompt-17",
    )
    return StoredJudgement(
        judgement_id=judgement_id,
        created_at=T0 + timedelta(seconds=n),
        status="partial",
        grader="judge",
        judge_model="qwen2.5-0.5b-instruct",
        prompt_version="group-v1",
        run_id=run_id,
        step=step,
        group_key="prompt-17",
        answers=[
            AnswerResult(
                id="a0",
                status="scored",
                score=1.0,
                criteria={
                    "correctness": CriterionMark(mark=5, score=1.0, reason="Matches the reference."),
                    "tone": CriterionMark(mark=5, score=1.0, reason="Clear and friendly."),
                },
                explanation="Correct with working.",
            ),
            AnswerResult(
                id="a1",
                status="scored",
                score=0.1667,
                criteria={
                    "correctness": CriterionMark(mark=1, score=0.0, reason="41 is wrong."),
                    "tone": CriterionMark(mark=3, score=0.5, reason="Neutral."),
                },
            ),
            AnswerResult(id="a2", status="unscored", score=None, error="judge output missing this answer"),
        ],
        usage=Usage(prompt_tokens=812, completion_tokens=240, judge_calls=2),
        timings=Timings(queue_ms=1.5, judge_ms=930.25, total_ms=934.0),
        attempts=2,
        request=request,
        raw_outputs=['{"scores": [', '{"scores": [{"id": "a0", "correctness": 5}]}'],
    )
