"""Judge backend for an OpenAI-compatible chat completions endpoint, such as `vllm serve`.

The judge then runs in a separate process (or machine), so this backend is only an HTTP client: it
retries what is transient (connection errors, 429, 5xx) and fails fast on what is not (other 4xx,
malformed bodies), and it turns every httpx/tenacity failure into the service's own exception tree.

Thinking judges (backends/thinking_profile.py): the endpoint's model files are not visible from here, so
the profile comes from the settings over what the model's name says. Each call sends the template's
switch (`chat_template_kwargs`), `thinking_token_budget` and `reasoning_effort` as the profile and the
call say; the reply is read in every shape vLLM's server has used (reasoning_split.reply_from_fields).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from judge_service.backends.base import (
    THINKING_OFF,
    BackendHealth,
    Generation,
    GenerationRequest,
    ThinkingCall,
    TokenLogprobs,
)
from judge_service.backends.reasoning_split import reply_from_fields
from judge_service.backends.thinking_profile import (
    ProfileSettings,
    ThinkingProfile,
    profile_for_model,
    profile_settings,
)
from judge_service.client.retry import retry_after_s as parse_retry_after
from judge_service.errors import CannotSleepError, JudgeBackendError, JudgeTimeoutError
from judge_service.redaction import protect_logs, redact, remember

if TYPE_CHECKING:
    from judge_service.config import Settings

logger = logging.getLogger(__name__)

_ERROR_TEXT_MAX = 300
_MODELS_LISTED_MAX = 20
HEALTH_TIMEOUT_S = 5.0  # a health check answers within this or counts as unavailable
SLEEP_TIMEOUT_S = 300.0  # offloading or reloading weights takes a while on a large model


class _Retryable(Exception):
    """One failed attempt worth repeating; internal, never escapes the backend."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        is_timeout: bool = False,
    ) -> None:
        super().__init__(message)
        self.reason = reason  # "429", "5xx" or "transport": what on_retry reports
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.is_timeout = is_timeout


def _error_text(response: httpx.Response) -> str:
    """The endpoint's own error message (vLLM and OpenAI shapes), else the raw body, truncated."""
    text = response.text
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
        elif isinstance(err, str):
            text = err
        elif isinstance(body.get("message"), str):
            text = body["message"]
        elif isinstance(body.get("detail"), str):
            text = body["detail"]
    text = " ".join(text.split())
    if len(text) > _ERROR_TEXT_MAX:
        text = text[: _ERROR_TEXT_MAX - 3] + "..."
    return text or "<empty body>"


def _display_url(url: str) -> str:
    """The endpoint without any user:password part or credential in its query, fit for messages and logs."""
    try:
        return redact(str(httpx.URL(url).copy_with(username=None, password=None)))
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<invalid url>"


class OpenAIHTTPBackend:
    """`JudgeBackend` over HTTP to an OpenAI-compatible server (`/v1/models`, `/v1/chat/completions`).

    Concurrent `generate()` calls share one connection pool; the server batches them.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        transport_retries: int = 3,
        max_context_tokens: int | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        on_retry: Callable[[str], None] | None = None,
        group_header: str | None = "X-Session-ID",
        thinking: ProfileSettings | None = None,
    ) -> None:
        if transport_retries < 0:
            raise ValueError("transport_retries must be >= 0")
        # From here on no log line shows them, httpx's own (which logs each request's URL) included.
        remember(api_key, base_url)
        protect_logs()
        self._base_url = base_url.rstrip("/")
        self._display_base = _display_url(self._base_url)
        # vLLM serves /tokenize at the server root, not under /v1.
        root = self._base_url[:-3] if self._base_url.endswith("/v1") else self._base_url
        self._tokenize_url = root + "/tokenize"
        self._root = root
        self._model = model
        self._api_key = api_key or None
        self._timeout_s = timeout_s
        self._transport_retries = transport_retries
        self._max_context_tokens = max_context_tokens
        self._transport = transport
        self._backoff_max_s = backoff_max_s
        # Jitter scaled to the base delay, so small test delays stay small.
        self._wait_exp = wait_exponential_jitter(
            initial=backoff_base_s, max=backoff_max_s, jitter=backoff_base_s
        )
        self._on_retry = on_retry
        self._group_header = group_header or None
        self._sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # replaceable in tests
        self._client: httpx.AsyncClient | None = None
        self._ready = False
        self._tokenize_available = True
        self._asleep = False  # put to sleep through this client (a server asleep before is not known)
        self._profile = _endpoint_profile(model, thinking or ProfileSettings())

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> OpenAIHTTPBackend:
        """Build from JUDGE_* settings; JUDGE_MAX_MODEL_LEN, when set, overrides what the server reports."""
        model = settings.served_model_name or settings.model
        if not model:
            raise ValueError(
                "backend=openai needs the model name the endpoint serves: "
                "set JUDGE_SERVED_MODEL_NAME (or JUDGE_MODEL)"
            )
        return cls(
            settings.openai_base_url,
            model,
            api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            timeout_s=settings.openai_timeout_s,
            transport_retries=settings.openai_transport_retries,
            max_context_tokens=settings.max_model_len,
            transport=transport,
            backoff_base_s=settings.openai_backoff_base_s,
            backoff_max_s=settings.openai_backoff_max_s,
            on_retry=on_retry,
            group_header=settings.openai_group_header,
            thinking=profile_settings(settings),
        )

    # --- protocol properties

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def max_context_tokens(self) -> int | None:
        return self._max_context_tokens

    @property
    def thinking_profile(self) -> ThinkingProfile:
        return self._profile

    @property
    def ready(self) -> bool:
        """start() succeeded and close() was not called."""
        return self._ready

    async def check_health(self) -> BackendHealth:
        """One GET of /models, no retries, a short timeout: does the endpoint (or router) answer?"""
        client = self._client
        if client is None:
            return BackendHealth(ok=False, error="the endpoint client is not started")
        try:
            response = await client.get("models", timeout=min(self._timeout_s, HEALTH_TIMEOUT_S))
        except httpx.HTTPError as exc:
            return BackendHealth(ok=False, error=f"{self._display_base}/models: {type(exc).__name__}: {exc}")
        if response.status_code != 200:
            return BackendHealth(
                ok=False, error=f"{self._display_base}/models answered {response.status_code}"
            )
        return BackendHealth(ok=True)

    # --- sleep and wake (backends/lifecycle.py), through vLLM's server routes

    @property
    def asleep(self) -> bool:
        return self._asleep

    def why_no_sleep(self) -> str | None:
        return None if self._client is not None else "the endpoint client is not started"

    async def sleep(self, level: int) -> int | None:
        """POST /sleep?level=N at the server root: vLLM serves it with VLLM_SERVER_DEV_MODE=1 and
        --enable-sleep-mode; elsewhere (another server, a router) it is a 404, said as such."""
        await self._sleep_route("sleep", {"level": level})
        self._asleep = True
        return None  # the server does not say what it freed

    async def wake(self) -> None:
        await self._sleep_route("wake_up", {})
        self._asleep = False

    async def _sleep_route(self, route: str, params: dict[str, int]) -> None:
        client = self._client
        if client is None:
            raise CannotSleepError("the endpoint client is not started")
        url = f"{self._root}/{route}"
        try:
            response = await client.post(url, params=params, timeout=max(self._timeout_s, SLEEP_TIMEOUT_S))
        except httpx.HTTPError as exc:
            raise JudgeBackendError(f"{self._display_base}: /{route}: {type(exc).__name__}: {exc}") from exc
        if response.status_code in (404, 405):
            raise CannotSleepError(
                f"the endpoint has no /{route} route ({response.status_code}): start vLLM with "
                "VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode, and point JUDGE_OPENAI_BASE_URL at it, "
                "not at a router"
            )
        if response.status_code != 200:
            raise JudgeBackendError(f"{self._display_base}: /{route} answered {response.status_code}")

    # --- lifecycle

    async def start(self) -> None:
        """Open the client and confirm the endpoint serves our model, so misconfiguration fails at boot."""
        if self._ready:
            return
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self._base_url + "/",
            headers=headers,
            timeout=httpx.Timeout(self._timeout_s),
            transport=self._transport,
        )
        try:
            body, _ = await self._request_json("GET", "models")
            self._check_models(body)
        except BaseException:
            await self._drop_client()
            raise
        self._ready = True
        logger.info(
            "openai judge backend ready: endpoint=%s model=%s max_context_tokens=%s",
            self._display_base,
            self._model,
            self._max_context_tokens,
        )

    async def close(self) -> None:
        self._ready = False
        await self._drop_client()

    async def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _check_models(self, body: Any) -> None:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise JudgeBackendError(
                f"malformed response from {self._display_base}/models: no 'data' list",
                details={"endpoint": self._display_base},
            )
        entries = [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)]
        entry = next((e for e in entries if e["id"] == self._model), None)
        if entry is None:
            available = [e["id"] for e in entries]
            shown = ", ".join(available[:_MODELS_LISTED_MAX]) or "<none>"
            if len(available) > _MODELS_LISTED_MAX:
                shown += f", ... ({len(available)} in all)"
            raise JudgeBackendError(
                f"model {self._model!r} is not served by {self._display_base}; available: {shown}",
                details={"endpoint": self._display_base, "model": self._model, "available": available},
            )
        max_len = entry.get("max_model_len")
        if self._max_context_tokens is None and isinstance(max_len, int) and max_len > 0:
            self._max_context_tokens = max_len

    # --- work

    async def generate(self, request: GenerationRequest) -> Generation:
        """One chat completion, with JSON-schema guided decoding when the request carries a schema."""
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            payload["seed"] = request.seed
        if request.top_logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = request.top_logprobs
        if request.json_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": request.json_schema, "strict": True},
            }
        payload.update(self._thinking_fields(request.thinking))
        headers = {"X-Request-Id": request.request_id} if request.request_id else {}
        if self._group_header and request.group_id:
            headers[self._group_header] = request.group_id
        body, attempts = await self._request_json(
            "POST", "chat/completions", payload=payload, headers=headers
        )
        return self._parse_completion(body, attempts, thinking=self._profile.thinks)

    def _thinking_fields(self, thinking: ThinkingCall) -> dict[str, Any]:
        """What a call sends for the profile's thinking (nothing for a model that does not think)."""
        profile = self._profile
        if not profile.thinks:
            return {}
        fields: dict[str, Any] = {}
        enabled = thinking.enabled or profile.switch == "always"
        if profile.switch == "toggle":
            fields["chat_template_kwargs"] = {profile.template_kwarg: thinking.enabled}
        if enabled and thinking.budget is not None:
            fields["thinking_token_budget"] = thinking.budget
        if enabled and thinking.min_tokens:
            fields["min_tokens"] = min(thinking.min_tokens, thinking.budget or thinking.min_tokens)
        if thinking.effort is not None:
            fields["reasoning_effort"] = thinking.effort
        if profile.keep_special_tokens:
            fields["skip_special_tokens"] = False
        return fields

    def _parse_completion(self, body: Any, attempts: int, *, thinking: bool = False) -> Generation:
        def malformed(why: str) -> JudgeBackendError:
            return JudgeBackendError(
                f"malformed response from {self._display_base}/chat/completions: {why}",
                details={"endpoint": self._display_base, "attempts": attempts},
            )

        if not isinstance(body, dict):
            raise malformed("body is not a JSON object")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise malformed("no choices")
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        content = message.get("content")
        # `reasoning` since vLLM 0.11 (which sends both), `reasoning_content` before.
        reasoning = next(
            (message[k] for k in ("reasoning", "reasoning_content") if isinstance(message.get(k), str)), None
        )
        finish = choices[0].get("finish_reason")
        finish = finish if isinstance(finish, str) else None
        if not isinstance(content, str) and reasoning is None and not (thinking and finish == "length"):
            raise malformed("choices[0].message.content is missing or null")
        raw_usage = body.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        extra: dict[str, Any] = {"attempts": attempts}
        if isinstance(body.get("id"), str):
            extra["response_id"] = body["id"]
        parts = reply_from_fields(
            content if isinstance(content, str) else None,
            reasoning,
            finish,
            _token_logprobs(choices[0].get("logprobs")),
            expects_thinking=thinking,
            end_marker=self._profile.end_marker,
        )
        details = usage.get("completion_tokens_details")
        counted = _as_int(details.get("reasoning_tokens")) if isinstance(details, dict) else 0
        return Generation(
            text=parts.content,
            prompt_tokens=_as_int(usage.get("prompt_tokens")),
            completion_tokens=_as_int(usage.get("completion_tokens")),
            finish_reason=finish,
            extra=extra,
            logprobs=parts.content_logprobs,
            reasoning=parts.reasoning,
            # vLLM has reported 0 here; then the positions before the reply's, when logprobs were asked.
            reasoning_tokens=counted or parts.reasoning_tokens,
            reasoning_ended=parts.ended,
            misrouted=parts.misrouted,
        )

    async def count_prompt_tokens(
        self, messages: list[dict[str, str]], thinking: ThinkingCall = THINKING_OFF
    ) -> int | None:
        """Exact prompt length via vLLM's /tokenize; None (the caller estimates) when the server lacks it.

        Best effort and not retried: a wrong guess only costs an early prompt_too_long check.
        """
        client = self._client
        if client is None or not self._tokenize_available:
            return None
        payload: dict[str, Any] = {"model": self._model, "messages": messages, "add_generation_prompt": True}
        if self._profile.switch == "toggle":
            payload["chat_template_kwargs"] = {self._profile.template_kwarg: thinking.enabled}
        try:
            response = await client.post(self._tokenize_url, json=payload)
        except httpx.HTTPError as exc:
            logger.debug("tokenize call failed: %s", type(exc).__name__)
            return None
        if response.status_code == 404:
            logger.info("%s has no /tokenize; prompt tokens will be estimated", self._display_base)
            self._tokenize_available = False
            return None
        if response.status_code != 200:
            return None
        try:
            count = response.json().get("count")
        except (ValueError, AttributeError):
            return None
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    # --- HTTP with retries

    async def _request_json(
        self,
        method: str,
        path: str,
        *,
        payload: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[Any, int]:
        """One call, retried on transient failures; returns (decoded JSON body, attempts made)."""
        attempts = 0

        async def once() -> Any:
            nonlocal attempts
            attempts += 1
            return await self._send_once(method, path, payload=payload, headers=headers, attempts=attempts)

        retrying = AsyncRetrying(
            sleep=self._sleep,
            stop=stop_after_attempt(self._transport_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_Retryable),
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            return await retrying(once), attempts
        except _Retryable as exc:
            cls = JudgeTimeoutError if exc.is_timeout else JudgeBackendError
            raise cls(
                self._redact(
                    f"{method} {self._display_base}/{path} failed after {attempts} attempts: {exc.message}"
                ),
                details={"attempts": attempts, "last_status": exc.status, "endpoint": self._display_base},
            ) from None

    async def _send_once(
        self,
        method: str,
        path: str,
        *,
        payload: Any,
        headers: dict[str, str] | None,
        attempts: int,
    ) -> Any:
        client = self._client
        if client is None:
            raise JudgeBackendError("openai judge backend is not started; call start() first")
        try:
            response = await client.request(method, path, json=payload, headers=headers)
        except httpx.TimeoutException as exc:
            raise _Retryable("transport", f"timed out ({type(exc).__name__})", is_timeout=True) from None
        except httpx.TransportError as exc:
            raise _Retryable("transport", f"{type(exc).__name__}: {exc}") from None
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
            raise JudgeBackendError(
                self._redact(f"{method} {self._display_base}/{path} failed: {type(exc).__name__}: {exc}"),
                details={"attempts": attempts, "last_status": None, "endpoint": self._display_base},
            ) from None

        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable(
                "429" if status == 429 else "5xx",
                f"HTTP {status}: {_error_text(response)}",
                status=status,
                retry_after_s=parse_retry_after(response.headers.get("retry-after")),
            )
        if status != 200:
            raise JudgeBackendError(
                self._redact(
                    f"{method} {self._display_base}/{path} -> HTTP {status}: {_error_text(response)}"
                ),
                details={"attempts": attempts, "last_status": status, "endpoint": self._display_base},
            )
        try:
            return response.json()
        except ValueError:
            raise JudgeBackendError(
                f"malformed response from {self._display_base}/{path}: body is not JSON",
                details={"attempts": attempts, "last_status": status, "endpoint": self._display_base},
            ) from None

    def _wait(self, retry_state: RetryCallState) -> float:
        """The server's Retry-After when it sent one (capped), else exponential backoff with jitter."""
        exc = retry_state.outcome.exception() if retry_state.outcome is not None else None
        if isinstance(exc, _Retryable) and exc.retry_after_s is not None:
            return min(exc.retry_after_s, self._backoff_max_s)
        return float(self._wait_exp(retry_state))

    def _before_sleep(self, retry_state: RetryCallState) -> None:
        exc = retry_state.outcome.exception() if retry_state.outcome is not None else None
        reason = exc.reason if isinstance(exc, _Retryable) else "transport"
        delay = retry_state.next_action.sleep if retry_state.next_action is not None else 0.0
        logger.warning(
            "judge endpoint %s: attempt %d failed (%s), retrying in %.2fs",
            self._display_base,
            retry_state.attempt_number,
            self._redact(str(exc)),
            delay,
        )
        if self._on_retry is not None:
            try:
                self._on_retry(reason)
            except Exception:  # a metrics hook must never break a judge call
                logger.exception("on_retry hook failed")

    def _redact(self, text: str) -> str:
        """Strip the API key from text that may echo it (error bodies, exception strings)."""
        return text.replace(self._api_key, "***") if self._api_key else text


def _token_logprobs(logprobs: Any) -> tuple[TokenLogprobs, ...] | None:
    """choices[0].logprobs.content ([{token, logprob, top_logprobs: [{token, logprob}]}]) as
    TokenLogprobs; None when absent or malformed (expected marks are then unavailable, nothing fails)."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    tokens = []
    for item in content:
        if not isinstance(item, dict) or not _is_entry(item):
            return None
        top = item.get("top_logprobs")
        alternatives = (
            [(t["token"], float(t["logprob"])) for t in top if _is_entry(t)] if isinstance(top, list) else []
        )
        tokens.append(TokenLogprobs(item["token"], float(item["logprob"]), tuple(alternatives)))
    return tuple(tokens)


def _is_entry(item: Any) -> bool:
    logprob = item.get("logprob") if isinstance(item, dict) else None
    return (
        isinstance(item, dict)
        and isinstance(item.get("token"), str)
        and isinstance(logprob, (int, float))
        and not isinstance(logprob, bool)
    )


def _as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _endpoint_profile(model: str, named: ProfileSettings) -> ThinkingProfile:
    """An endpoint's profile: the settings over the model name's family. The server runs the parser (named
    or the family's), so budgets hold wherever it has one; reasoning_effort goes to any thinking model."""
    profile = named.apply(profile_for_model(model))
    return replace(
        profile,
        enforces_budget=profile.thinks and profile.parser is not None and not profile.gpt_oss,
        takes_effort=profile.thinks,
    )
