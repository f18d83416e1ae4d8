"""A small async client of the judge service's HTTP API, for the command-line tools.

Retries what is worth retrying: 429 (honouring Retry-After), 502/503/504 and transport errors, with
exponential backoff, `retries` times. A 401 raises ApiKeyRefused (nothing can succeed without a valid key);
anything else comes back as the service's error body. With `api_key`, every request carries
`Authorization: Bearer <key>`; the key is never put in a message (httpx masks the header in reprs).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from judge_service.schemas import JudgementPage

_RETRY_STATUSES = {429, 502, 503, 504}
Transport = httpx.AsyncBaseTransport | None  # tests inject an in-process server
_MAX_WAIT_S = 30.0


class ApiKeyRefused(RuntimeError):
    """The service answered 401: no API key was sent (`key_sent` false) or it is not one of its keys."""

    def __init__(self, key_sent: bool) -> None:
        self.key_sent = key_sent
        what = "refused the API key" if key_sent else "needs an API key"
        super().__init__(f"the judge service {what} (401 unauthorized)")


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """The Authorization header for `api_key` (surrounding spaces dropped; none for None or blank).

    ValueError, without the key in it, when the key is not printable ASCII (it could not be sent)."""
    key = (api_key or "").strip()
    if not key:
        return {}
    if not all(" " <= c <= "~" for c in key):
        raise ValueError("the API key must be printable ASCII (no control or non-ASCII characters)")
    return {"Authorization": f"Bearer {key}"}


@dataclass
class Reply:
    status: int
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status == 200

    def error(self) -> dict[str, Any]:
        """The service's {"code", "message"} (or a stand-in when the body is not one)."""
        error = self.body.get("error")
        if isinstance(error, dict):
            return {"code": error.get("code", "http_error"), "message": error.get("message", "")}
        return {"code": "http_error", "message": f"HTTP {self.status}"}


class JudgeClient:
    def __init__(
        self,
        server: str,
        *,
        timeout_s: float = 600.0,
        retries: int = 4,
        backoff_s: float = 1.0,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = bearer_headers(api_key)
        self._key_sent = bool(headers)
        self._http = httpx.AsyncClient(
            base_url=server.rstrip("/"), timeout=timeout_s, headers=headers, transport=transport
        )
        self._retries = retries
        self._backoff_s = backoff_s

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        attempt = 0
        while True:
            last = attempt >= self._retries
            wait = min(self._backoff_s * 2**attempt, _MAX_WAIT_S)
            attempt += 1
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if last:
                    message = f"{type(exc).__name__}: {exc}"
                    return Reply(0, {"error": {"code": "unreachable", "message": message}})
                await asyncio.sleep(wait)
                continue
            if response.status_code in _RETRY_STATUSES and not last:
                retry_after = response.headers.get("retry-after", "")
                if retry_after.isdigit():
                    wait = min(float(retry_after), _MAX_WAIT_S)
                await asyncio.sleep(wait)
                continue
            if response.status_code == 401:
                raise ApiKeyRefused(self._key_sent)
            try:
                body = response.json()
            except ValueError:
                body = {"error": {"code": "http_error", "message": response.text[:200]}}
            return Reply(response.status_code, body if isinstance(body, dict) else {"items": body})

    async def judge(self, group: dict[str, Any]) -> Reply:
        return await self.request("POST", "/v1/judge", json=group)

    async def regrade(self, body: dict[str, Any], *, idempotency_key: str | None = None) -> Reply:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return await self.request("POST", "/v1/regrade", json=body, headers=headers)

    async def get(self, judgement_id: str) -> dict[str, Any] | None:
        reply = await self.request("GET", f"/v1/judgements/{judgement_id}")
        if reply.status == 404:
            return None
        return self._checked(reply)

    async def list_run(
        self, run_id: str, *, step: int | None, limit: int, cursor: str | None
    ) -> JudgementPage:
        params: dict[str, Any] = {"limit": limit}
        if step is not None:
            params["step"] = step
        if cursor is not None:
            params["cursor"] = cursor
        reply = await self.request("GET", f"/v1/runs/{run_id}/judgements", params=params)
        return JudgementPage.model_validate(self._checked(reply))

    @staticmethod
    def _checked(reply: Reply) -> dict[str, Any]:
        if not reply.ok:
            error = reply.error()
            status = f"{reply.status} {error['code']}"
            raise RuntimeError(f"the judge service answered {status}: {error['message']}")
        return reply.body
