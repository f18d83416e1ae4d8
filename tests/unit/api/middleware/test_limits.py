"""The body reader (api/middleware/limits.py) on scripted ASGI messages: the cap, the body handed on
whole, a client gone mid-body, and bodies left unread."""

from __future__ import annotations

import json

import pytest
from starlette.types import Message, Receive, Scope, Send

from judge_service.api.middleware.limits import RequestBody

CHUNKED = [(b"transfer-encoding", b"chunked")]


def scope_with(headers: list[tuple[bytes, bytes]]) -> Scope:
    return {"type": "http", "method": "POST", "path": "/v1/judge", "headers": headers}


class Recorder:
    """The app inside: what it received, in how many messages."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.called = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.called = True
        while True:
            message = await receive()
            self.messages.append(message)
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def scripted(chunks: list[bytes]) -> tuple[Receive, list[int]]:
    reads = [0]

    async def receive() -> Message:
        reads[0] += 1
        i = reads[0] - 1
        return {"type": "http.request", "body": chunks[i], "more_body": i < len(chunks) - 1}

    return receive, reads


async def run(reader: RequestBody, scope: Scope, receive: Receive) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await reader(scope, receive, send)
    return sent


def error_of(sent: list[Message]) -> tuple[int, dict[str, object], dict[bytes, bytes]]:
    return sent[0]["status"], json.loads(sent[1]["body"])["error"], dict(sent[0]["headers"])


async def test_reading_stops_once_the_cap_is_passed_and_the_app_never_runs() -> None:
    app = Recorder()
    receive, reads = scripted([b"x" * 1000] * 10)
    sent = await run(RequestBody(app, max_bytes=2500), scope_with(CHUNKED), receive)
    assert reads[0] == 3 and not app.called
    status, error, headers = error_of(sent)
    assert status == 413 and error["code"] == "too_large" and "while streaming" in str(error["message"])
    assert headers[b"connection"] == b"close"


async def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    app = Recorder()
    receive, reads = scripted([b"x"])
    sent = await run(RequestBody(app, max_bytes=100), scope_with([(b"content-length", b"101")]), receive)
    assert reads[0] == 0 and not app.called
    assert error_of(sent)[:2][0] == 413 and "declares 101 bytes" in str(error_of(sent)[1]["message"])


@pytest.mark.parametrize(
    "headers",
    [
        [(b"content-length", b"30")],
        CHUNKED,
        [(b"content-length", b"30"), (b"transfer-encoding", b"chunked")],  # chunked wins
        [(b"content-length", b"ten")],  # a length that cannot be trusted: counted
    ],
)
async def test_the_app_gets_the_body_whole_in_one_message(headers: list[tuple[bytes, bytes]]) -> None:
    app = Recorder()
    receive, _ = scripted([b"a" * 10, b"b" * 10, b"c" * 10])
    await run(RequestBody(app, max_bytes=100), scope_with(headers), receive)
    assert app.messages == [
        {"type": "http.request", "body": b"a" * 10 + b"b" * 10 + b"c" * 10, "more_body": False}
    ]


async def test_a_client_gone_mid_body_is_not_answered() -> None:
    app = Recorder()
    script: list[Message] = [
        {"type": "http.request", "body": b"x", "more_body": True},
        {"type": "http.disconnect"},
    ]
    messages = iter(script)

    async def receive() -> Message:
        return next(messages)

    assert await run(RequestBody(app, max_bytes=100), scope_with(CHUNKED), receive) == []
    assert not app.called


@pytest.mark.parametrize("headers", [[], [(b"content-length", b"0")]])
async def test_a_request_without_a_body_passes_straight_through(headers: list[tuple[bytes, bytes]]) -> None:
    seen: list[Receive] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(receive)

    async def receive() -> Message:
        raise AssertionError("nothing to read")

    await run(RequestBody(app, max_bytes=100), scope_with(headers), receive)
    assert seen == [receive]


async def test_while_the_gate_refuses_the_body_is_left_unread() -> None:
    seen: list[Receive] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(receive)

    receive, reads = scripted([b"x" * 10])
    reader = RequestBody(app, max_bytes=100, refusing=lambda: True)
    await run(reader, scope_with([(b"content-length", b"10")]), receive)
    assert seen == [receive] and reads[0] == 0
