"""The service's one exception tree. api/errors.py maps it to HTTP; nothing else does.

    JudgeServiceError                  code            HTTP
    ├── InvalidGroupError              invalid_group   422  the request is well-formed but unusable
    │   └── PromptTooLongError         prompt_too_long 422  the rendered group exceeds the judge's context
    ├── ForbiddenError                 forbidden       403  a feature the operator has turned off
    ├── NotFoundError                  not_found       404
    ├── ConflictError                  conflict        409  an Idempotency-Key reused for another request,
    │                                                       or a member that does not fit its group
    ├── OverloadedError                overloaded      429  admission queue full (carries retry_after_s)
    ├── NotReadyError                  not_ready       503  the engine is still loading or has shut down
    ├── ShuttingDownError              shutting_down   503  the service is stopping; retry (Retry-After)
    ├── StoreUnavailableError          store_unavailable 503  the database cannot be reached; retry
    └── JudgeBackendError              judge_unavailable 502  the judge could not produce any output
        └── JudgeTimeoutError          judge_timeout   504  the group's deadline passed

Two codes answer 422, on purpose, one per kind of refusal: `invalid_request` (api/errors.py) when the
request does not match its schema (a field missing, mistyped or out of bounds; `details` lists each field
and problem, as pydantic found it), and `invalid_group` when it matches but the service cannot use it (a
grader name it does not know, a cursor no store issued, labels for answers the judgement does not hold).
A client fixes the first by its schema and the second by the message.

Malformed judge *output* is not an exception: the parser returns typed per-answer failures, and the
service turns exhausted retries into unscored answers (never a score of 0).
"""

from __future__ import annotations

from typing import Any


class JudgeServiceError(Exception):
    code = "internal"
    http_status = 500

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class InvalidGroupError(JudgeServiceError):
    code = "invalid_group"
    http_status = 422


class PromptTooLongError(InvalidGroupError):
    code = "prompt_too_long"


class ForbiddenError(JudgeServiceError):
    code = "forbidden"
    http_status = 403


class NotFoundError(JudgeServiceError):
    code = "not_found"
    http_status = 404


class ConflictError(JudgeServiceError):
    code = "conflict"
    http_status = 409


class OverloadedError(JudgeServiceError):
    code = "overloaded"
    http_status = 429

    def __init__(
        self, message: str, *, retry_after_s: int = 1, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, details=details)
        self.retry_after_s = retry_after_s


class NotReadyError(JudgeServiceError):
    code = "not_ready"
    http_status = 503


class ShuttingDownError(JudgeServiceError):
    code = "shutting_down"
    http_status = 503
    retry_after_s = 1


class EngineAsleepError(JudgeServiceError):
    """The judge's engine sleeps (POST /v1/engine/sleep) and did not wake within JUDGE_SLEEP_HOLD_S: the
    same request succeeds once it is woken (Retry-After)."""

    code = "engine_asleep"
    http_status = 503
    retry_after_s = 5


class CannotSleepError(JudgeServiceError):
    """The judge's engine cannot sleep (vLLM's CPU build, sleep mode not enabled, an endpoint without
    vLLM's sleep routes); it keeps serving."""

    code = "cannot_sleep"
    http_status = 409


class StoreUnavailableError(JudgeServiceError):
    """The judgement database cannot be reached or refused the call for a transient reason (a restart,
    a failover, a full connection pool); the same request may succeed later (Retry-After)."""

    code = "store_unavailable"
    http_status = 503
    retry_after_s = 2


class JudgeBackendError(JudgeServiceError):
    code = "judge_unavailable"
    http_status = 502


class RubricWriteError(JudgeBackendError):
    """The judge wrote no valid rubric after its retries (judging/llm/rubric_writer.py)."""

    code = "rubric_unwritten"


class JudgeTimeoutError(JudgeBackendError):
    code = "judge_timeout"
    http_status = 504
