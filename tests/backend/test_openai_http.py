"""OpenAIHTTPBackend on httpx.MockTransport: wire format, retries, error mapping; no network, no sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from judge_service.backends.base import GenerationRequest
from judge_service.backends.openai_http import OpenAIHTTPBackend
from judge_service.config import Settings
from judge_service.errors import JudgeBackendError, JudgeTimeoutError

BASE = "http://judge.test:8001/v1"
MODEL = "judge-model"
API_KEY = "sk-very-secret-key-123"
SCHEMA = {"type": "object", "properties": {"scores": {"type": "array"}}, "required": ["scores"]}
MESSAGES = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "Rate these."}]

Handler = Callable[[httpx.Request], httpx.Response]


def models_response(*ids: str, max_model_len: int | None = 4096) -> httpx.Response:
    data: list[dict[str, Any]] = []
    for model_id in ids:
        entry: dict[str, Any] = {"id": model_id, "object": "model"}
        if max_model_len is not None:
            entry["max_model_len"] = max_model_len
        data.append(entry)
    return httpx.Response(200, json={"object": "list", "data": data})


def completion_response(content: str | None = '{"scores": [1]}') -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
        },
    )


class Recorder:
    """Routes /models to a model listing and everything else to `handler`, keeping every request."""

    def __init__(self, handler: Handler, models: httpx.Response | None = None) -> None:
        self.handler = handler
        self.models = models
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path == "/v1/models":
            return self.models if self.models is not None else models_response(MODEL)
        return self.handler(request)

    def calls(self, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.path == path]


def sequence(*steps: httpx.Response | Exception) -> Handler:
    """A handler answering with each step in turn (repeating the last), raising the exceptions."""
    remaining = list(steps)

    def handler(request: httpx.Request) -> httpx.Response:
        step = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        if isinstance(step, Exception):
            raise step
        return step

    return handler


async def make_backend(
    handler: Handler,
    *,
    models: httpx.Response | None = None,
    start: bool = True,
    **kwargs: Any,
) -> tuple[OpenAIHTTPBackend, Recorder, list[str]]:
    recorder = Recorder(handler, models)
    reasons: list[str] = []
    kwargs.setdefault("transport_retries", 3)
    backend = OpenAIHTTPBackend(
        BASE,
        MODEL,
        transport=httpx.MockTransport(recorder),
        backoff_base_s=0.001,
        backoff_max_s=0.01,
        on_retry=reasons.append,
        **kwargs,
    )
    if start:
        await backend.start()
    return backend, recorder, reasons


def request(**kwargs: Any) -> GenerationRequest:
    kwargs.setdefault("messages", MESSAGES)
    kwargs.setdefault("max_tokens", 256)
    return GenerationRequest(**kwargs)


# --- happy path and wire format


async def test_generate_success_sends_expected_body_and_parses_usage() -> None:
    backend, rec, reasons = await make_backend(sequence(completion_response()))
    try:
        gen = await backend.generate(request(json_schema=SCHEMA, seed=7, temperature=0.0, request_id="g-1"))
    finally:
        await backend.close()

    assert gen.text == '{"scores": [1]}'
    assert (gen.prompt_tokens, gen.completion_tokens, gen.finish_reason) == (42, 7, "stop")
    assert gen.extra["attempts"] == 1
    (call,) = rec.calls("/v1/chat/completions")
    assert call.method == "POST"
    assert str(call.url) == f"{BASE}/chat/completions"
    assert call.headers["x-request-id"] == "g-1"
    body = json.loads(call.content)
    assert body["model"] == MODEL
    assert body["messages"] == MESSAGES
    assert body["max_tokens"] == 256
    assert body["temperature"] == 0.0
    assert body["seed"] == 7
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "judgement", "schema": SCHEMA, "strict": True},
    }
    assert reasons == []


@pytest.mark.parametrize(("header", "sent"), [(None, "x-session-id"), ("X-Group", "x-group"), ("", None)])
async def test_every_call_of_a_group_names_the_group_for_the_router(
    header: str | None, sent: str | None
) -> None:
    options = {} if header is None else {"group_header": header}
    backend, rec, _ = await make_backend(sequence(completion_response(), completion_response()), **options)
    try:
        await backend.generate(request(request_id="g-1", group_id="g"))
        await backend.generate(request(request_id="g-1-o1", group_id="g"))
    finally:
        await backend.close()
    calls = rec.calls("/v1/chat/completions")
    if sent is None:
        assert all("x-session-id" not in c.headers for c in calls)
    else:
        assert [c.headers[sent] for c in calls] == ["g", "g"]


async def test_generate_without_schema_or_seed_omits_them_and_tolerates_missing_usage() -> None:
    bare = httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})
    backend, rec, _ = await make_backend(sequence(bare))
    gen = await backend.generate(request())
    await backend.close()
    body = json.loads(rec.calls("/v1/chat/completions")[0].content)
    assert "response_format" not in body
    assert "seed" not in body
    assert (gen.text, gen.prompt_tokens, gen.completion_tokens, gen.finish_reason) == ("ok", 0, 0, None)


async def test_bearer_header_sent_when_api_key_set() -> None:
    backend, rec, _ = await make_backend(sequence(completion_response()), api_key=API_KEY)
    await backend.generate(request())
    await backend.close()
    assert rec.requests, "expected calls"
    assert all(r.headers["authorization"] == f"Bearer {API_KEY}" for r in rec.requests)


async def test_api_key_from_settings_is_sent_but_never_shown() -> None:
    recorder = Recorder(sequence(completion_response()))
    settings = Settings(backend="openai", model=MODEL, openai_base_url=BASE, openai_api_key=API_KEY)
    assert API_KEY not in repr(settings) and API_KEY not in str(settings.model_dump())
    backend = OpenAIHTTPBackend.from_settings(settings, transport=httpx.MockTransport(recorder))
    await backend.start()
    await backend.generate(request())
    await backend.close()
    assert recorder.requests and all(
        r.headers["authorization"] == f"Bearer {API_KEY}" for r in recorder.requests
    )


async def test_no_authorization_header_without_api_key() -> None:
    backend, rec, _ = await make_backend(sequence(completion_response()))
    await backend.generate(request())
    await backend.close()
    assert all("authorization" not in r.headers for r in rec.requests)


# --- retries


async def test_retry_on_500_then_success() -> None:
    backend, rec, reasons = await make_backend(
        sequence(httpx.Response(500, json={"message": "boom"}), completion_response())
    )
    gen = await backend.generate(request())
    await backend.close()
    assert gen.text == '{"scores": [1]}'
    assert gen.extra["attempts"] == 2
    assert len(rec.calls("/v1/chat/completions")) == 2
    assert reasons == ["5xx"]


@pytest.mark.parametrize(("retry_after", "expected"), [("0.005", 0.005), ("60", 0.01)])
async def test_retry_on_429_honors_retry_after_capped(retry_after: str, expected: float) -> None:
    backend, rec, reasons = await make_backend(
        sequence(httpx.Response(429, headers={"Retry-After": retry_after}, json={}), completion_response())
    )
    sleeps: list[float] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    backend._sleep = record_sleep
    gen = await backend.generate(request())
    await backend.close()
    assert gen.text
    assert len(rec.calls("/v1/chat/completions")) == 2
    assert reasons == ["429"]
    assert sleeps == [pytest.approx(expected)]


async def test_backoff_without_retry_after_stays_within_bounds() -> None:
    backend, _, reasons = await make_backend(
        sequence(httpx.Response(502), httpx.Response(504), httpx.Response(500), completion_response())
    )
    sleeps: list[float] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    backend._sleep = record_sleep
    assert (await backend.generate(request())).extra["attempts"] == 4
    await backend.close()
    assert reasons == ["5xx"] * 3
    assert len(sleeps) == 3 and all(0 < s <= 0.01 for s in sleeps)


async def test_exhausted_retries_on_503_raise_backend_error_with_attempts() -> None:
    backend, rec, reasons = await make_backend(
        sequence(httpx.Response(503, json={"message": "overloaded"})), transport_retries=2
    )
    with pytest.raises(JudgeBackendError) as info:
        await backend.generate(request())
    await backend.close()
    err = info.value
    assert not isinstance(err, JudgeTimeoutError)
    assert err.details == {"attempts": 3, "last_status": 503, "endpoint": BASE}
    assert "overloaded" in err.message
    assert len(rec.calls("/v1/chat/completions")) == 3
    assert reasons == ["5xx", "5xx"]


async def test_400_fails_immediately_with_endpoint_message() -> None:
    long_tail = "x" * 1000
    body = {"object": "error", "message": f"max_tokens is too large {long_tail}", "code": 400}
    backend, rec, reasons = await make_backend(sequence(httpx.Response(400, json=body)))
    with pytest.raises(JudgeBackendError) as info:
        await backend.generate(request())
    await backend.close()
    assert "max_tokens is too large" in info.value.message
    assert len(info.value.message) < 500
    assert info.value.details["last_status"] == 400
    assert len(rec.calls("/v1/chat/completions")) == 1
    assert reasons == []


async def test_transport_error_retried_then_raised() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    backend, rec, reasons = await make_backend(sequence(completion_response()))
    rec.handler = handler
    with pytest.raises(JudgeBackendError) as info:
        await backend.generate(request())
    await backend.close()
    assert not isinstance(info.value, JudgeTimeoutError)
    assert info.value.details["attempts"] == 4
    assert info.value.details["last_status"] is None
    assert len(rec.calls("/v1/chat/completions")) == 4
    assert reasons == ["transport"] * 3


async def test_transport_error_then_success() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.ConnectError("reset", request=request)
        return completion_response()

    backend, _, reasons = await make_backend(handler)
    gen = await backend.generate(request())
    await backend.close()
    assert gen.text and reasons == ["transport"]


async def test_read_timeout_raises_timeout_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    backend, rec, reasons = await make_backend(handler, transport_retries=1)
    with pytest.raises(JudgeTimeoutError) as info:
        await backend.generate(request())
    await backend.close()
    assert info.value.details["attempts"] == 2
    assert len(rec.calls("/v1/chat/completions")) == 2
    assert reasons == ["transport"]


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, json={"object": "chat.completion"}),
        httpx.Response(200, json={"choices": []}),
        completion_response(content=None),
        httpx.Response(200, text="<html>not json</html>"),
    ],
    ids=["no-choices", "empty-choices", "null-content", "not-json"],
)
async def test_malformed_200_raises_without_retry(response: httpx.Response) -> None:
    backend, rec, reasons = await make_backend(sequence(response))
    with pytest.raises(JudgeBackendError, match="malformed response"):
        await backend.generate(request())
    await backend.close()
    assert len(rec.calls("/v1/chat/completions")) == 1
    assert reasons == []


async def test_on_retry_hook_failure_does_not_break_the_call() -> None:
    def bad_hook(reason: str) -> None:
        raise RuntimeError("metrics down")

    recorder = Recorder(sequence(httpx.Response(502), completion_response()))
    backend = OpenAIHTTPBackend(
        BASE,
        MODEL,
        transport=httpx.MockTransport(recorder),
        backoff_base_s=0.001,
        backoff_max_s=0.01,
        on_retry=bad_hook,
    )
    await backend.start()
    assert (await backend.generate(request())).text
    await backend.close()


# --- start / close


async def test_start_model_not_listed_names_available_models() -> None:
    backend, _, _ = await make_backend(
        sequence(completion_response()), models=models_response("other-a", "other-b"), start=False
    )
    with pytest.raises(JudgeBackendError) as info:
        await backend.start()
    assert "other-a" in info.value.message and "other-b" in info.value.message
    assert MODEL in info.value.message
    assert not backend.ready
    with pytest.raises(JudgeBackendError):  # not started: the client was dropped
        await backend.generate(request())


async def test_start_picks_max_model_len_and_becomes_ready() -> None:
    backend, rec, _ = await make_backend(
        sequence(completion_response()), models=models_response("x", MODEL, max_model_len=8192), start=False
    )
    assert not backend.ready and backend.max_context_tokens is None
    await backend.start()
    assert backend.ready
    assert backend.max_context_tokens == 8192
    assert backend.model_name == MODEL
    assert str(rec.calls("/v1/models")[0].url) == f"{BASE}/models"
    await backend.close()
    assert not backend.ready


async def test_explicit_max_context_tokens_wins_over_server() -> None:
    backend, _, _ = await make_backend(
        sequence(completion_response()),
        models=models_response(MODEL, max_model_len=8192),
        max_context_tokens=2048,
    )
    assert backend.max_context_tokens == 2048
    await backend.close()


async def test_start_retries_5xx_then_fails_with_backend_error() -> None:
    backend, rec, reasons = await make_backend(
        sequence(completion_response()), models=httpx.Response(503), start=False, transport_retries=1
    )
    with pytest.raises(JudgeBackendError) as info:
        await backend.start()
    assert info.value.details["attempts"] == 2
    assert len(rec.calls("/v1/models")) == 2
    assert reasons == ["5xx"]
    assert not backend.ready


# --- count_prompt_tokens


async def test_count_prompt_tokens_uses_root_tokenize() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/tokenize"
        body = json.loads(request.content)
        assert body == {"model": MODEL, "messages": MESSAGES, "add_generation_prompt": True}
        return httpx.Response(200, json={"count": 17, "max_model_len": 4096, "tokens": list(range(17))})

    backend, rec, _ = await make_backend(handler)
    assert await backend.count_prompt_tokens(MESSAGES) == 17
    assert str(rec.calls("/tokenize")[0].url) == "http://judge.test:8001/tokenize"
    await backend.close()


async def test_count_prompt_tokens_404_is_remembered() -> None:
    backend, rec, _ = await make_backend(sequence(httpx.Response(404, json={"detail": "Not Found"})))
    assert await backend.count_prompt_tokens(MESSAGES) is None
    assert await backend.count_prompt_tokens(MESSAGES) is None
    assert len(rec.calls("/tokenize")) == 1
    await backend.close()


async def test_count_prompt_tokens_other_errors_return_none_and_try_again() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down", request=request)

    backend, rec, _ = await make_backend(sequence(httpx.Response(500)))
    assert await backend.count_prompt_tokens(MESSAGES) is None
    rec.handler = handler
    assert await backend.count_prompt_tokens(MESSAGES) is None
    rec.handler = sequence(httpx.Response(200, json={"count": 5}))
    assert await backend.count_prompt_tokens(MESSAGES) == 5
    assert len(rec.calls("/tokenize")) == 3
    await backend.close()


async def test_count_prompt_tokens_before_start_is_none() -> None:
    backend, rec, _ = await make_backend(sequence(httpx.Response(200, json={"count": 5})), start=False)
    assert await backend.count_prompt_tokens(MESSAGES) is None
    assert rec.requests == []


# --- secrets


async def test_api_key_never_in_error_messages() -> None:
    echo = httpx.Response(401, json={"error": {"message": f"Invalid API key: {API_KEY}"}})
    backend, _, _ = await make_backend(sequence(echo), api_key=API_KEY)
    with pytest.raises(JudgeBackendError) as info:
        await backend.generate(request())
    assert API_KEY not in str(info.value)
    assert API_KEY not in repr(info.value.details)
    assert "Invalid API key" in info.value.message
    await backend.close()

    backend, _, _ = await make_backend(
        sequence(httpx.Response(503, text=f"upstream said {API_KEY}")), api_key=API_KEY, transport_retries=1
    )
    with pytest.raises(JudgeBackendError) as info:
        await backend.generate(request())
    assert API_KEY not in str(info.value)
    assert API_KEY not in repr(info.value.details)
    await backend.close()


# --- settings


def test_from_settings_prefers_served_model_name() -> None:
    settings = Settings(
        backend="openai",
        model="org/big-model",
        served_model_name="judge",
        openai_base_url=BASE,
        openai_api_key=API_KEY,
        openai_timeout_s=5.0,
        openai_transport_retries=1,
        max_model_len=2048,
    )
    backend = OpenAIHTTPBackend.from_settings(settings)
    assert backend.model_name == "judge"
    assert backend.max_context_tokens == 2048
    settings2 = Settings(backend="openai", model="org/big-model")
    assert OpenAIHTTPBackend.from_settings(settings2).model_name == "org/big-model"


def test_from_settings_without_model_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="JUDGE_SERVED_MODEL_NAME"):
        OpenAIHTTPBackend.from_settings(Settings(backend="openai"))


# --- health checks (judge_service/readiness.py asks them periodically)


async def test_health_is_one_models_call_without_retries() -> None:
    backend, rec, reasons = await make_backend(sequence(completion_response()))
    assert (await backend.check_health()).ok
    rec.models = httpx.Response(503)
    calls = len(rec.calls("/v1/models"))
    health = await backend.check_health()
    assert (health.ok, health.fatal) == (False, False) and "answered 503" in (health.error or "")
    assert len(rec.calls("/v1/models")) == calls + 1 and reasons == []  # never retried
    await backend.close()
    assert (await backend.check_health()).error == "the endpoint client is not started"


async def test_health_of_an_endpoint_that_refuses_connections() -> None:
    started = False

    def handle(request: httpx.Request) -> httpx.Response:
        if started:
            raise httpx.ConnectError("connection refused")
        return models_response(MODEL)

    backend = OpenAIHTTPBackend(BASE, MODEL, transport=httpx.MockTransport(handle))
    await backend.start()
    started = True
    health = await backend.check_health()
    assert not health.ok and not health.fatal
    assert health.error is not None and "ConnectError: connection refused" in health.error
    await backend.close()
