"""Reading stored judgements for quality reports, from the store, the service or the HTTP API alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from judge_service.quality.agreement import HumanLabels, JudgementIndex
from judge_service.quality.labels import agreement_by_fingerprint
from judge_service.schemas import (
    MAX_JUDGEMENTS_PAGE,
    FingerprintAgreement,
    JudgementPage,
    JudgeResponse,
    StoredJudgement,
)

_FETCH_CONCURRENCY = 16


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
        page = await lister.list_run(run_id, step=step, limit=MAX_JUDGEMENTS_PAGE, cursor=cursor)
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


JudgementGetter = Callable[[str], Awaitable[Mapping[str, Any] | None]]


async def index_for_labels(
    labels: Sequence[HumanLabels],
    *,
    get: JudgementGetter,
    lister: RunLister | None = None,
    run_id: str | None = None,
    step: int | None = None,
    fingerprint: str | None = None,
) -> JudgementIndex:
    """The grader scores human labels refer to: by judgement id via `get`, by group key in the run.

    ValueError when labels name group keys but no run is given to find them in.
    """
    index = JudgementIndex()
    if any(label.group_key is not None for label in labels):
        if lister is None or run_id is None:
            raise ValueError("labels that name a group_key need a run to look it up in (run_id)")
        async for item in iter_run(lister, run_id, step=step, fingerprint=fingerprint):
            index.add(item.model_dump(mode="json"))
    ids = list(dict.fromkeys(label.judgement_id for label in labels if label.judgement_id is not None))
    for doc in await _fetch_all(get, ids):
        if doc is not None:
            index.add(doc)
    return index


T = TypeVar("T")


async def _fetch_all(get: Callable[[str], Awaitable[T]], ids: Sequence[str]) -> list[T]:
    """get(id) for every id, at most _FETCH_CONCURRENCY at once, in order."""
    gate = asyncio.Semaphore(_FETCH_CONCURRENCY)

    async def fetch(judgement_id: str) -> T:
        async with gate:
            return await get(judgement_id)

    return list(await asyncio.gather(*(fetch(i) for i in ids)))


class LabelledRunReader(Protocol):
    """What the agreement of a run's labels reads (JudgeService offers it)."""

    async def run_labels(self, run_id: str) -> list[HumanLabels]: ...

    async def get(self, judgement_id: str) -> StoredJudgement: ...

    async def regrades_of(self, judgement_ids: list[str]) -> list[StoredJudgement]: ...


async def run_agreement_report(reader: LabelledRunReader, run_id: str) -> list[FingerprintAgreement]:
    """Per grader fingerprint, the agreement with the run's labels of the labelled judgements and their
    regrades (quality/labels.py)."""
    labels = await reader.run_labels(run_id)
    ids = sorted({label.judgement_id for label in labels if label.judgement_id})
    judgements = await _fetch_all(reader.get, ids) + await reader.regrades_of(ids)
    return agreement_by_fingerprint(labels, judgements)
