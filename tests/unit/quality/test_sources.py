"""Reading a run page by page."""

from __future__ import annotations

from datetime import UTC, datetime

from judge_service.quality.sources import run_groups
from judge_service.schemas import AnswerResult, JudgementPage, JudgeResponse, Timings, Usage


def _judgement(n: int) -> JudgeResponse:
    return JudgeResponse(
        judgement_id=f"{n:032x}",
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        status="partial",
        grader="judge",
        judge_model="fake",
        prompt_version="judge_group@x",
        run_id="r",
        step=0,
        group_key=None,
        answers=[
            AnswerResult(id="a", status="scored", score=n / 10),
            AnswerResult(id="b", status="unscored", score=None, error="no entry"),
        ],
        usage=Usage(),
        timings=Timings(),
        attempts=1,
    )


class TwoPages:
    def __init__(self) -> None:
        self.cursors: list[str | None] = []

    async def list_run(
        self, run_id: str, *, step: int | None, limit: int, cursor: str | None
    ) -> JudgementPage:
        self.cursors.append(cursor)
        if cursor is None:
            return JudgementPage(items=[_judgement(1), _judgement(2)], next_cursor="p2")
        return JudgementPage(items=[_judgement(3)], next_cursor=None)


async def test_run_groups_follows_cursors_to_the_last_page() -> None:
    lister = TwoPages()
    assert await run_groups(lister, "r") == [[0.1, None], [0.2, None], [0.3, None]]
    assert lister.cursors == [None, "p2"]
