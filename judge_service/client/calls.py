"""Every API call the clients make, built once: the HTTP request, and how its reply becomes a model.

Both clients (synchronous.py, asynchronous.py) only send a `Call` and hand the reply to `Call.parse`;
what a call sends and returns lives here alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from judge_service.client.errors import ApiKeyRefused, JudgeClientError
from judge_service.schemas import (
    AgreementReport,
    AgreementRequest,
    BatchItem,
    BatchJudgeResponse,
    CalibrationReport,
    CalibrationRequest,
    EngineStatusView,
    ErrorBody,
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
    StoredJudgement,
    StoredLabels,
)

T = TypeVar("T")
Body = BaseModel | Mapping[str, Any]


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse_ok: Callable[[Any], T]
    json: Any = None
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def parse(self, response: httpx.Response, *, key_sent: bool) -> T:
        """The reply as a model; JudgeClientError with the service's error body otherwise."""
        if response.status_code == 401:
            raise ApiKeyRefused(key_sent)
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200:
            raise JudgeClientError(response.status_code, _error_body(response, body))
        try:
            return self.parse_ok(body)
        except ValidationError as exc:
            message = f"the reply to {self.method} {self.path} is not what this client reads: {exc}"
            raise JudgeClientError(
                response.status_code, ErrorBody(code="invalid_reply", message=message)
            ) from exc


def _error_body(response: httpx.Response, body: Any) -> ErrorBody:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        try:
            return ErrorBody.model_validate(error)
        except ValidationError:
            pass
    return ErrorBody(code="http_error", message=f"HTTP {response.status_code}: {response.text[:200]}")


def unreachable(exc: Exception) -> JudgeClientError:
    return JudgeClientError(0, ErrorBody(code="unreachable", message=f"{type(exc).__name__}: {exc}"))


def past_deadline(deadline_s: float | None) -> JudgeClientError:
    message = f"no reply within the call's deadline of {deadline_s:g} s"
    return JudgeClientError(0, ErrorBody(code="deadline", message=message))


def _payload(body: Body) -> Any:
    """A model as JSON (fields that are null, all of them defaults, are not sent); a dict as it is."""
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", exclude_none=True)
    return dict(body)


def _keyed(idempotency_key: str | None) -> dict[str, str]:
    # Always keyed: a retry after a lost reply must replay the stored judgement, not judge again.
    return {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}


def _optional_key(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}


def judge(group: JudgeRequest | Mapping[str, Any], idempotency_key: str | None) -> Call[JudgeResponse]:
    return Call(
        "POST", "/v1/judge", JudgeResponse.model_validate, _payload(group), None, _keyed(idempotency_key)
    )


def judge_batch(
    groups: Sequence[JudgeRequest | Mapping[str, Any]], idempotency_key: str | None
) -> Call[list[BatchItem]]:
    return Call(
        "POST",
        "/v1/judge/batch",
        lambda body: BatchJudgeResponse.model_validate(body).results,
        {"groups": [_payload(g) for g in groups]},
        None,
        _keyed(idempotency_key),
    )


def member(request: MemberRequest | Mapping[str, Any]) -> Call[MemberResponse]:
    # No Idempotency-Key: a member's group key and answer id already make its retries safe.
    return Call("POST", "/v1/judge/member", MemberResponse.model_validate, _payload(request))


def judgement(judgement_id: str) -> Call[StoredJudgement]:
    return Call("GET", f"/v1/judgements/{judgement_id}", StoredJudgement.model_validate)


def explain(judgement_id: str) -> Call[ExplainedReasons]:
    return Call("POST", f"/v1/judgements/{judgement_id}/reasons", ExplainedReasons.model_validate)


def write_rubric(request: RubricRequest | Mapping[str, Any]) -> Call[Rubric]:
    # No Idempotency-Key: a rubric's id is its content's hash, so a retry gets the one stored.
    return Call("POST", "/v1/rubrics", Rubric.model_validate, _payload(request))


def rubric(rubric_id: str, version: int | None = None) -> Call[Rubric]:
    params = None if version is None else {"version": version}
    return Call("GET", f"/v1/rubrics/{rubric_id}", Rubric.model_validate, None, params)


def edit_rubric(rubric_id: str, edit: RubricEdit | Mapping[str, Any]) -> Call[Rubric]:
    return Call("PUT", f"/v1/rubrics/{rubric_id}", Rubric.model_validate, _payload(edit))


def run_page(run_id: str, *, step: int | None, limit: int, cursor: str | None) -> Call[JudgementPage]:
    params: dict[str, Any] = {"limit": limit}
    if step is not None:
        params["step"] = step
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", f"/v1/runs/{run_id}/judgements", JudgementPage.model_validate, None, params)


def runs(*, limit: int, cursor: str | None) -> Call[RunPage]:
    params: dict[str, Any] = {"limit": limit}
    if cursor is not None:
        params["cursor"] = cursor
    return Call("GET", "/v1/runs", RunPage.model_validate, None, params)


def run_steps(
    run_id: str,
    *,
    from_step: int | None,
    to_step: int | None,
    fingerprint: str | None,
    limit: int,
    cursor: str | None,
) -> Call[RunSteps]:
    given = {"from": from_step, "to": to_step, "fingerprint": fingerprint, "cursor": cursor}
    params: dict[str, Any] = {"limit": limit, **{k: v for k, v in given.items() if v is not None}}
    return Call("GET", f"/v1/runs/{run_id}/steps", RunSteps.model_validate, None, params)


def put_labels(judgement_id: str, labels: LabelsRequest | Mapping[str, Any]) -> Call[StoredLabels]:
    path = f"/v1/judgements/{judgement_id}/labels"
    return Call("PUT", path, StoredLabels.model_validate, _payload(labels))


def labels(judgement_id: str) -> Call[StoredLabels]:
    return Call("GET", f"/v1/judgements/{judgement_id}/labels", StoredLabels.model_validate)


def run_labels(run_id: str) -> Call[StoredLabels]:
    return Call("GET", f"/v1/runs/{run_id}/labels", StoredLabels.model_validate)


def run_agreement(run_id: str) -> Call[list[FingerprintAgreement]]:
    return Call("GET", f"/v1/runs/{run_id}/agreement", _agreements)


def _agreements(body: Any) -> list[FingerprintAgreement]:
    return [FingerprintAgreement.model_validate(item) for item in body]


def regrade(
    request: RegradeRequest | Mapping[str, Any], idempotency_key: str | None
) -> Call[RegradeResponse]:
    return Call(
        "POST",
        "/v1/regrade",
        RegradeResponse.model_validate,
        _payload(request),
        None,
        _optional_key(idempotency_key),
    )


def calibration(request: CalibrationRequest | Mapping[str, Any]) -> Call[CalibrationReport]:
    return Call("POST", "/v1/quality/calibration", CalibrationReport.model_validate, _payload(request))


def prune(request: PruneRequest | Mapping[str, Any]) -> Call[PruneReport]:
    return Call("POST", "/v1/prune", PruneReport.model_validate, _payload(request))


def engine() -> Call[EngineStatusView]:
    return Call("GET", "/v1/engine", EngineStatusView.model_validate)


def engine_sleep(level: int, drain: bool) -> Call[EngineStatusView]:
    return Call("POST", "/v1/engine/sleep", EngineStatusView.model_validate, {"level": level, "drain": drain})


def engine_wake() -> Call[EngineStatusView]:
    return Call("POST", "/v1/engine/wake", EngineStatusView.model_validate)


def agreement(request: AgreementRequest | Mapping[str, Any]) -> Call[AgreementReport]:
    return Call("POST", "/v1/quality/agreement", AgreementReport.model_validate, _payload(request))
