"""The typed client on httpx.MockTransport: what it retries and how long it waits (recorded sleeps, not
timing), its deadline, idempotency keys across retries, typed replies and errors, sync and async alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from judge_service.client import (
    ApiKeyRefused,
    AsyncJudgeClient,
    JudgeClient,
    JudgeClientError,
    RetryPolicy,
)
from judge_service.client.retry import retry_after_s
from judge_service.schemas import JudgeRequest, JudgeResponse

NOW = "2026-12-03T10:00:00Z"
GROUP = {
    "conversation": [{"role": "user", "content": "2+2?"}],
    "reference": "4",
    "answers": [{"id": "a", "text": "4"}],
}


def reply(judgement_id: str = "j" * 32) -> dict[str, Any]:
    return {
        "judgement_id": judgement_id,
        "created_at": NOW,
        "status": "ok",
        "grader": "judge",
        "judge_model": "m",
        "prompt_version": "p",
        "run_id": None,
        "step": None,
        "group_key": None,
        "answers": [{"id": "a", "status": "scored", "score": 1.0}],
        "usage": {},
        "timings": {},
        "attempts": 1,
        "a_field_from_a_newer_service": True,
    }


Step = httpx.Response | Exception


def scripted(*steps: Step) -> tuple[list[httpx.Request], Callable[[httpx.Request], httpx.Response]]:
    queue = list(steps)
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        step = queue.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    return seen, handle


class Sleeps(list[float]):
    def sync(self, seconds: float) -> None:
        self.append(seconds)

    async def coro(self, seconds: float) -> None:
        self.append(seconds)


def sync_client(handle: Any, sleeps: Sleeps, **policy: Any) -> JudgeClient:
    retry = RetryPolicy(**{"backoff_s": 1.0, **policy})
    return JudgeClient("http://judge", retry=retry, transport=httpx.MockTransport(handle), sleep=sleeps.sync)


def async_client(handle: Any, sleeps: Sleeps, **policy: Any) -> AsyncJudgeClient:
    retry = RetryPolicy(**{"backoff_s": 1.0, **policy})
    return AsyncJudgeClient(
        "http://judge", retry=retry, transport=httpx.MockTransport(handle), sleep=sleeps.coro
    )


def retried() -> tuple[Step, ...]:
    return (
        httpx.Response(
            429, headers={"retry-after": "7"}, json={"error": {"code": "overloaded", "message": "x"}}
        ),
        httpx.ConnectError("refused"),
        httpx.Response(503, json={"error": {"code": "not_ready", "message": "loading"}}),
        httpx.Response(504),
        httpx.Response(200, json=reply()),
    )  # fresh responses per test: a response's body can be read once


def test_sync_retries_what_is_worth_retrying_with_backoff_and_retry_after() -> None:
    seen, handle = scripted(*retried())
    sleeps = Sleeps()
    with sync_client(handle, sleeps, retries=4) as client:
        result = client.judge(GROUP)
    assert isinstance(result, JudgeResponse) and result.answers[0].score == 1.0
    # Retry-After 7 s first, then the backoff of the 2nd, 3rd and 4th attempt: 2, 4, 8 s.
    assert sleeps == [7.0, 2.0, 4.0, 8.0]
    keys = {r.headers["idempotency-key"] for r in seen}
    assert len(seen) == 5 and len(keys) == 1  # every retry carries the same key


async def test_async_retries_the_same_way() -> None:
    seen, handle = scripted(*retried())
    sleeps = Sleeps()
    async with async_client(handle, sleeps, retries=4) as client:
        result = await client.judge(JudgeRequest.model_validate(GROUP))
    assert result.answers[0].score == 1.0 and sleeps == [7.0, 2.0, 4.0, 8.0]
    assert len({r.headers["idempotency-key"] for r in seen}) == 1
    assert JudgeRequest.model_validate(json.loads(seen[0].content)) == JudgeRequest.model_validate(GROUP)


def test_waits_are_capped_and_http_date_retry_after_is_read() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    _, handle = scripted(
        httpx.Response(503, headers={"retry-after": "3600"}),
        httpx.Response(503, headers={"retry-after": later}),
        httpx.Response(200, json=reply()),
    )
    sleeps = Sleeps()
    with sync_client(handle, sleeps, retries=2, max_wait_s=30.0) as client:
        client.judge(GROUP)
    assert sleeps == [30.0, 30.0]
    now = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
    assert retry_after_s("Thu, 03 Dec 2026 10:01:30 GMT", now=now) == 90.0
    assert retry_after_s("Thu, 03 Dec 2026 09:00:00 GMT", now=now) == 0.0
    assert retry_after_s("soon", now=now) is None and retry_after_s(None) is None
    assert retry_after_s(" 1.5 ") == 1.5 and retry_after_s("-3") == 0.0 and retry_after_s("nan") is None


def test_gives_up_after_the_retries_with_the_service_error() -> None:
    _, handle = scripted(
        *[httpx.Response(502, json={"error": {"code": "judge_unavailable", "message": "m"}})] * 3
    )
    sleeps = Sleeps()
    with sync_client(handle, sleeps, retries=2) as client, pytest.raises(JudgeClientError) as info:
        client.judge(GROUP)
    assert (info.value.status, info.value.code, sleeps) == (502, "judge_unavailable", [1.0, 2.0])


def test_transport_errors_after_the_retries_are_unreachable() -> None:
    _, handle = scripted(httpx.ConnectError("refused"), httpx.ConnectError("refused"))
    with sync_client(handle, Sleeps(), retries=1) as client, pytest.raises(JudgeClientError) as info:
        client.judge(GROUP)
    assert (info.value.status, info.value.code) == (0, "unreachable")


def test_no_wait_is_begun_past_the_deadline() -> None:
    _, handle = scripted(
        httpx.Response(429, headers={"retry-after": "60"}), httpx.Response(200, json=reply())
    )
    sleeps = Sleeps()
    with (
        sync_client(handle, sleeps, retries=3, deadline_s=10.0) as client,
        pytest.raises(JudgeClientError) as info,
    ):
        client.judge(GROUP)
    assert info.value.status == 429 and sleeps == []


def test_client_errors_are_not_retried_and_come_back_typed() -> None:
    invalid = httpx.Response(
        422, json={"error": {"code": "invalid_request", "message": "answers: too short"}}
    )
    seen, handle = scripted(
        invalid, httpx.Response(404, json={"error": {"code": "not_found", "message": "no"}})
    )
    with sync_client(handle, Sleeps(), retries=5) as client:
        with pytest.raises(JudgeClientError) as info:
            client.judge({})
        assert (info.value.status, info.value.error.message) == (422, "answers: too short")
        with pytest.raises(JudgeClientError) as missing:
            client.judgement("f" * 32)
        assert missing.value.code == "not_found"
    assert len(seen) == 2


def test_401_is_api_key_refused_and_the_key_is_sent_as_bearer() -> None:
    seen, handle = scripted(httpx.Response(401), httpx.Response(401))
    transport = httpx.MockTransport(handle)
    with (
        JudgeClient("http://judge", api_key="s3cret", transport=transport) as client,
        pytest.raises(ApiKeyRefused) as info,
    ):
        client.judge(GROUP)
    assert info.value.key_sent and seen[0].headers["authorization"] == "Bearer s3cret"
    assert "s3cret" not in str(info.value)


def test_given_idempotency_key_and_batch_results() -> None:
    batch = {"results": [{"judgement": reply()}, {"error": {"code": "prompt_too_long", "message": "m"}}]}
    seen, handle = scripted(httpx.Response(200, json=batch))
    with sync_client(handle, Sleeps()) as client:
        items = client.judge_batch([GROUP, GROUP], idempotency_key="step-7")
    assert seen[0].headers["idempotency-key"] == "step-7"
    assert items[0].judgement is not None and items[1].error is not None
    assert items[1].error.code == "prompt_too_long"


def test_run_judgements_follows_every_page() -> None:
    pages = [
        {"items": [reply("a" * 32), reply("b" * 32)], "next_cursor": "Mg"},
        {"items": [reply("c" * 32)], "next_cursor": None},
    ]
    seen, handle = scripted(*(httpx.Response(200, json=p) for p in pages))
    with sync_client(handle, Sleeps()) as client:
        ids = [j.judgement_id for j in client.run_judgements("run-1", step=3)]
    assert ids == ["a" * 32, "b" * 32, "c" * 32]
    assert seen[0].url.params["step"] == "3" and seen[1].url.params["cursor"] == "Mg"


def test_a_reply_this_client_cannot_read_is_an_error_not_a_crash() -> None:
    _, handle = scripted(httpx.Response(200, json={"judgement_id": 3}))
    with sync_client(handle, Sleeps()) as client, pytest.raises(JudgeClientError) as info:
        client.judge(GROUP)
    assert info.value.code == "invalid_reply"
