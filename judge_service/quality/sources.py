"""Reading a run's stored judgements page by page, from the store, the service or the HTTP API alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from judge_service.schemas import JudgementPage, JudgeResponse

PAGE_SIZE = 500  # the largest page the HTTP API serves


class RunLister(Protocol):
    """What JudgementStore, JudgeService and the CLI's HTTP client all offer."""

    async def list_run(
        self, run_id: str, *, step: int | None, limit: int, cursor: str | None
    ) -> JudgementPage: ...


async def iter_run(
    lister: RunLister, run_id: str, *, step: int | None = None, fingerprint: str | None = None
) -> AsyncIterator[JudgeResponse]:
    """Every judgement of the run, oldest first; only those of one grader fingerprint when given."""
    cursor: str | None = None
    while True:
        page = await lister.list_run(run_id, step=step, limit=PAGE_SIZE, cursor=cursor)
        for item in page.items:
            if fingerprint is None or item.grader_fingerprint == fingerprint:
                yield item
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def run_groups(
    lister: RunLister, run_id: str, *, step: int | None = None, fingerprint: str | None = None
) -> list[list[float | None]]:
    """The run's groups as lists of answer scores (None for unscored answers), for calibration."""
    return [
        [a.score if a.status == "scored" else None for a in item.answers]
        async for item in iter_run(lister, run_id, step=step, fingerprint=fingerprint)
    ]
