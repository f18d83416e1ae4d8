"""`judge-service prune --before DATE [--run RUN] [--include-labelled]`: delete stored judgements created
before a date (of one run) through the service (POST /v1/prune; the key needs `admin`), call after call
until none is left, each call at most --per-call judgements so that no request runs for long."""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime, time

from judge_service.client import AsyncJudgeClient
from judge_service.schemas import PruneReport, PruneRequest


def parse_before(text: str) -> datetime:
    """A date (midnight UTC) or an ISO 8601 time; a time without a zone is read as UTC."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--before {text!r} is not a date: give YYYY-MM-DD (midnight UTC) or an ISO 8601 time"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


async def prune(
    client: AsyncJudgeClient,
    before: datetime,
    *,
    run_id: str | None,
    include_labelled: bool,
    per_call: int,
    progress: bool,
) -> PruneReport:
    """Every call's counts added up, until a call leaves nothing more."""
    total: PruneReport | None = None
    async with client:
        while True:
            request = PruneRequest(
                before=before, run_id=run_id, include_labelled=include_labelled, max_judgements=per_call
            )
            report = await client.prune(request)
            total = report if total is None else _add(total, report)
            if progress:
                sys.stderr.write(f"\rpruned {total.judgements} judgements")
            if not report.more:
                break
    if progress:
        sys.stderr.write("\n")
    return total


def _add(a: PruneReport, b: PruneReport) -> PruneReport:
    return a.model_copy(
        update={
            "judgements": a.judgements + b.judgements,
            "explained_reasons": a.explained_reasons + b.explained_reasons,
            "labels": a.labels + b.labels,
            "claims": a.claims + b.claims,
            "seconds": round(a.seconds + b.seconds, 3),
            "more": b.more,
        }
    )


def describe(report: PruneReport) -> str:
    scope = f" of run {report.run_id}" if report.run_id else ""
    return (
        f"pruned {report.judgements} judgements created before {report.before.isoformat()}{scope} "
        f"(with {report.explained_reasons} explained reasons and {report.labels} labels), and "
        f"{report.claims} lapsed claims, in {report.seconds:.1f} s"
    )
