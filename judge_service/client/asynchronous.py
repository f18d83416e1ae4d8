"""AsyncJudgeClient: the client for asyncio code (the trainer adapters, the command-line tools)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx

import judge_service.client.calls as calls
from judge_service.client.errors import bearer_headers
from judge_service.client.retry import RetryPolicy
from judge_service.schemas import (
    MAX_JUDGEMENTS_PAGE,
    AgreementReport,
    AgreementRequest,
    BatchItem,
    CalibrationReport,
    CalibrationRequest,
    EngineStatusView,
    ExplainedReasons,
    FingerprintAgreement,
    JudgementPage,
    JudgeRequest,
    JudgeResponse,
    LabelsRequest,
    MemberRequest,
    MemberResponse,
    PruneReport,
    PruneRequest,
    RegradeRequest,
    RegradeResponse,
    Rubric,
    RubricEdit,
    RubricRequest,
    RunPage,
    RunSteps,
    RunSummary,
    StoredJudgement,
    StoredLabels,
)

T = TypeVar("T")


class AsyncJudgeClient:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,  # replaceable in tests
    ) -> None:
        headers = bearer_headers(api_key)
        self._key_sent = bool(headers)
        self._retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, transport=transport)
        self._sleep = sleep

    async def __aenter__(self) -> AsyncJudgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def judge(
        self, group: JudgeRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> JudgeResponse:
        return await self._send(calls.judge(group, idempotency_key))

    async def judge_batch(
        self, groups: Sequence[JudgeRequest | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> list[BatchItem]:
        """One result per group, in order: each holds a judgement or that group's error."""
        return await self._send(calls.judge_batch(groups, idempotency_key))

    async def member(self, request: MemberRequest | Mapping[str, Any]) -> MemberResponse:
        """One answer of a group (POST /v1/judge/member): returns once the group is judged."""
        return await self._send(calls.member(request))

    async def judgement(self, judgement_id: str) -> StoredJudgement:
        return await self._send(calls.judgement(judgement_id))

    async def explain(self, judgement_id: str) -> ExplainedReasons:
        """Reasons for a marks-only judgement's marks, written once by its judge and stored; the marks
        and scores do not change (POST /v1/judgements/{id}/reasons)."""
        return await self._send(calls.explain(judgement_id))

    async def write_rubric(self, request: RubricRequest | Mapping[str, Any]) -> Rubric:
        """The judge's checklist rubric for a conversation and reference (POST /v1/rubrics): written once,
        then the stored one."""
        return await self._send(calls.write_rubric(request))

    async def rubric(self, rubric_id: str, version: int | None = None) -> Rubric:
        """A rubric's latest version, or `version`."""
        return await self._send(calls.rubric(rubric_id, version))

    async def edit_rubric(self, rubric_id: str, edit: RubricEdit | Mapping[str, Any]) -> Rubric:
        """Store edited items as the rubric's next version (PUT /v1/rubrics/{id})."""
        return await self._send(calls.edit_rubric(rubric_id, edit))

    async def list_run(
        self,
        run_id: str,
        *,
        step: int | None = None,
        limit: int = MAX_JUDGEMENTS_PAGE,
        cursor: str | None = None,
    ) -> JudgementPage:
        return await self._send(calls.run_page(run_id, step=step, limit=limit, cursor=cursor))

    async def run_judgements(self, run_id: str, *, step: int | None = None) -> AsyncIterator[JudgeResponse]:
        """Every judgement of the run (or of one step), oldest first, fetching page after page."""
        cursor: str | None = None
        while True:
            page = await self.list_run(run_id, step=step, cursor=cursor)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def list_runs(self, *, limit: int = 50, cursor: str | None = None) -> RunPage:
        """One page of runs with their totals, by run id; pass next_cursor on."""
        return await self._send(calls.runs(limit=limit, cursor=cursor))

    async def runs(self) -> AsyncIterator[RunSummary]:
        """Every run, page after page."""
        cursor: str | None = None
        while True:
            page = await self.list_runs(cursor=cursor)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def run_steps(
        self,
        run_id: str,
        *,
        from_step: int | None = None,
        to_step: int | None = None,
        fingerprint: str | None = None,
        limit: int = 1000,
        cursor: str | None = None,
    ) -> RunSteps:
        """A run's figures per step (mean score and spread, flat and unscored shares, ...), by step."""
        call = calls.run_steps(
            run_id, from_step=from_step, to_step=to_step, fingerprint=fingerprint, limit=limit, cursor=cursor
        )
        return await self._send(call)

    async def put_labels(self, judgement_id: str, labels: LabelsRequest | Mapping[str, Any]) -> StoredLabels:
        """Store a person's marks or ranks for a judged group; the group's labels after."""
        return await self._send(calls.put_labels(judgement_id, labels))

    async def labels(self, judgement_id: str) -> StoredLabels:
        return await self._send(calls.labels(judgement_id))

    async def run_labels(self, run_id: str) -> StoredLabels:
        """A run's human labels, in the format `judge-service agreement --human` reads (one per line)."""
        return await self._send(calls.run_labels(run_id))

    async def run_agreement(self, run_id: str) -> list[FingerprintAgreement]:
        """How well each grader fingerprint agrees with the run's labels."""
        return await self._send(calls.run_agreement(run_id))

    async def regrade(
        self, request: RegradeRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> RegradeResponse:
        return await self._send(calls.regrade(request, idempotency_key))

    async def calibration(self, request: CalibrationRequest | Mapping[str, Any]) -> CalibrationReport:
        return await self._send(calls.calibration(request))

    async def prune(self, request: PruneRequest | Mapping[str, Any]) -> PruneReport:
        """Delete judgements created before a time, up to max_judgements per call (POST /v1/prune; the
        key needs `admin`); call again while the report says `more`."""
        return await self._send(calls.prune(request))

    async def engine(self) -> EngineStatusView:
        """The judge engine's state (GET /v1/engine; the key needs `admin`)."""
        return await self._send(calls.engine())

    async def engine_sleep(self, level: int = 1, *, drain: bool = True) -> EngineStatusView:
        """Put the judge's engine to sleep for a trainer sharing its GPUs (POST /v1/engine/sleep; the key
        needs `admin`): groups in flight finish first; JudgeClientError 409 where it cannot sleep."""
        return await self._send(calls.engine_sleep(level, drain))

    async def engine_wake(self) -> EngineStatusView:
        """Wake the judge's engine (POST /v1/engine/wake); its `state` is `failed` when the wake check found
        the judge marking its probe groups otherwise than before the sleep."""
        return await self._send(calls.engine_wake())

    async def agreement(self, request: AgreementRequest | Mapping[str, Any]) -> AgreementReport:
        return await self._send(calls.agreement(request))

    async def _send(self, call: calls.Call[T]) -> T:
        attempts = self._retry.attempts()
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    json=call.json,
                    params=call.params,
                    headers=call.headers,
                    timeout=attempts.timeout(),
                )
            except httpx.TransportError as exc:
                wait = attempts.wait_after(None)
                if wait is None:
                    raise (
                        calls.past_deadline(self._retry.deadline_s)
                        if attempts.out_of_time()
                        else calls.unreachable(exc)
                    ) from exc
            else:
                wait = attempts.wait_after(response)
                if wait is None:
                    return call.parse(response, key_sent=self._key_sent)
            await self._sleep(wait)
