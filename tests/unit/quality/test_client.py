"""The CLI's HTTP client retries what is worth retrying, on httpx.MockTransport."""

from __future__ import annotations

import httpx

from judge_service.quality.client import JudgeClient


def scripted(*replies: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    queue = list(replies)
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        step = queue.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    return httpx.MockTransport(handle), seen


async def test_retries_overload_unavailability_and_connection_errors_then_succeeds() -> None:
    transport, seen = scripted(
        httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"code": "overloaded"}}),
        httpx.ConnectError("refused"),
        httpx.Response(503, json={"error": {"code": "not_ready", "message": "loading"}}),
        httpx.Response(200, json={"judgement_id": "j"}),
    )
    async with JudgeClient("http://judge", retries=3, backoff_s=0, transport=transport) as client:
        reply = await client.judge({"answers": []})
    assert reply.ok and reply.body == {"judgement_id": "j"} and len(seen) == 4


async def test_gives_up_after_the_retries_with_the_last_error() -> None:
    transport, seen = scripted(*[httpx.Response(502, json={"error": {"code": "judge_unavailable"}})] * 3)
    async with JudgeClient("http://judge", retries=2, backoff_s=0, transport=transport) as client:
        reply = await client.judge({})
    assert (reply.status, reply.error()["code"], len(seen)) == (502, "judge_unavailable", 3)


async def test_client_errors_are_not_retried_and_404_means_missing() -> None:
    invalid = httpx.Response(
        422, json={"error": {"code": "invalid_request", "message": "answers: too short"}}
    )
    transport, seen = scripted(invalid, httpx.Response(404, json={"error": {"code": "not_found"}}))
    async with JudgeClient("http://judge", retries=5, backoff_s=0, transport=transport) as client:
        reply = await client.judge({})
        assert reply.error() == {"code": "invalid_request", "message": "answers: too short"}
        assert await client.get("f" * 32) is None
    assert len(seen) == 2
