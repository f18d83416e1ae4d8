"""A typed Python client of the judge service: `JudgeClient` (sync) and `AsyncJudgeClient`.

    from judge_service.client import JudgeClient
    with JudgeClient("http://127.0.0.1:8000") as judge:
        reply = judge.judge({"conversation": [...], "reference": "...", "answers": [...]})
        scores = [a.score for a in reply.answers]  # None for an unscored answer, never 0

Requests are the service's own pydantic models (or plain dicts of the same shape); replies are typed
models. Failures raise JudgeClientError with the service's ErrorBody; a 401 raises ApiKeyRefused. Retries
and the overall deadline are in retry.py; POST /v1/judge and /v1/judge/batch always carry an
Idempotency-Key (a new one per call unless given), so a retry after a lost reply is not judged twice.
step_weights (steps.py) turns a group judged with attribution "steps" into per-step weights. Used by the
command-line tools and the trainer adapters; imports schemas only.
"""

from judge_service.client.asynchronous import AsyncJudgeClient
from judge_service.client.errors import ApiKeyRefused, JudgeClientError
from judge_service.client.retry import RetryPolicy
from judge_service.client.steps import first_wrong_step, step_weights
from judge_service.client.synchronous import JudgeClient

__all__ = [
    "ApiKeyRefused",
    "AsyncJudgeClient",
    "JudgeClient",
    "JudgeClientError",
    "RetryPolicy",
    "first_wrong_step",
    "step_weights",
]
