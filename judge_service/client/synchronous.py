"""JudgeClient: the blocking client, for scripts and trainers that call rewards synchronously."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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


class JudgeClient:
    """The same calls as AsyncJudgeClient (asynchronous.py), blocking."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,  # replaceable in tests
    ) -> None:
        headers = bearer_headers(api_key)
        self._key_sent = bool(headers)
        self._retry = retry or RetryPolicy()
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, transport=transport)
        self._sleep = sleep

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def judge(
        self, group: JudgeRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> JudgeResponse:
        return self._send(calls.judge(group, idempotency_key))

    def judge_batch(
        self, groups: Sequence[JudgeRequest | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> list[BatchItem]:
        """One result per group, in order: each holds a judgement or that group's error."""
        return self._send(calls.judge_batch(groups, idempotency_key))

    def member(self, request: MemberRequest | Mapping[str, Any]) -> MemberResponse:
        """One answer of a group (POST /v1/judge/member): returns once the group is judged."""
        return self._send(calls.member(request))

    def judgement(self, judgement_id: str) -> StoredJudgement:
        return self._send(calls.judgement(judgement_id))

    def explain(self, judgement_id: str) -> ExplainedReasons:
        """Reasons for a marks-only judgement's marks, written once by its judge and stored; the marks
        and scores do not change (POST /v1/judgements/{id}/reasons)."""
        return self._send(calls.explain(judgement_id))

    def write_rubric(self, request: RubricRequest | Mapping[str, Any]) -> Rubric:
        """The judge's checklist rubric for a conversation and reference (POST /v1/rubrics): written once,
        then the stored one."""
        return self._send(calls.write_rubric(request))

    def rubric(self, rubric_id: str, version: int | None = None) -> Rubric:
        """A rubric's latest version, or `version`."""
        return self._send(calls.rubric(rubric_id, version))

    def edit_rubric(self, rubric_id: str, edit: RubricEdit | Mapping[str, Any]) -> Rubric:
        """Store edited items as the rubric's next version (PUT /v1/rubrics/{id})."""
        return self._send(calls.edit_rubric(rubric_id, edit))

    def list_run(
        self,
        run_id: str,
        *,
        step: int | None = None,
        limit: int = MAX_JUDGEMENTS_PAGE,
        cursor: str | None = None,
    ) -> JudgementPage:
        return self._send(calls.run_page(run_id, step=step, limit=limit, cursor=cursor))

    def run_judgements(self, run_id: str, *, step: int | None = None) -> Iterator[JudgeResponse]:
        """Every judgement of the run (or of one step), oldest first, fetching page after page."""
        cursor: str | None = None
        while True:
            page = self.list_run(run_id, step=step, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def list_runs(self, *, limit: int = 50, cursor: str | None = None) -> RunPage:
        """One page of runs with their totals, by run id; pass next_cursor on."""
        return self._send(calls.runs(limit=limit, cursor=cursor))

    def runs(self) -> Iterator[RunSummary]:
        """Every run, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_runs(cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def run_steps(
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
        return self._send(call)

    def put_labels(self, judgement_id: str, labels: LabelsRequest | Mapping[str, Any]) -> StoredLabels:
        """Store a person's marks or ranks for a judged group; the group's labels after."""
        return self._send(calls.put_labels(judgement_id, labels))

    def labels(self, judgement_id: str) -> StoredLabels:
        return self._send(calls.labels(judgement_id))

    def run_labels(self, run_id: str) -> StoredLabels:
        """A run's human labels, in the format `judge-service agreement --human` reads (one per line)."""
        return self._send(calls.run_labels(run_id))

    def run_agreement(self, run_id: str) -> list[FingerprintAgreement]:
        """How well each grader fingerprint agrees with the run's labels."""
        return self._send(calls.run_agreement(run_id))

    def regrade(
        self, request: RegradeRequest | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> RegradeResponse:
        return self._send(calls.regrade(request, idempotency_key))

    def calibration(self, request: CalibrationRequest | Mapping[str, Any]) -> CalibrationReport:
        return self._send(calls.calibration(request))

    def prune(self, request: PruneRequest | Mapping[str, Any]) -> PruneReport:
        """Delete judgements created before a time, up to max_judgements per call (POST /v1/prune; the
        key needs `admin`); call again while the report says `more`."""
        return self._send(calls.prune(request))

    def engine(self) -> EngineStatusView:
        """The judge engine's state (GET /v1/engine; the key needs `admin`)."""
        return self._send(calls.engine())

    def engine_sleep(self, level: int = 1, *, drain: bool = True) -> EngineStatusView:
        """Put the judge's engine to sleep for a trainer sharing its GPUs (POST /v1/engine/sleep; the key
        needs `admin`): groups in flight finish first; JudgeClientError 409 where it cannot sleep."""
        return self._send(calls.engine_sleep(level, drain))

    def engine_wake(self) -> EngineStatusView:
        """Wake the judge's engine (POST /v1/engine/wake); its `state` is `failed` when the wake check found
        the judge marking its probe groups otherwise than before the sleep."""
        return self._send(calls.engine_wake())

    def agreement(self, request: AgreementRequest | Mapping[str, Any]) -> AgreementReport:
        return self._send(calls.agreement(request))

    def _send(self, call: calls.Call[T]) -> T:
        attempts = self._retry.attempts()
        while True:
            try:
                response = self._http.request(
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
            self._sleep(wait)
