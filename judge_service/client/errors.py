"""What the client raises: the service's error body, typed."""

from __future__ import annotations

from judge_service.schemas import ErrorBody


class JudgeClientError(RuntimeError):
    """The service refused or failed the request (`status` is its HTTP status), or could not be reached
    (`status` 0, code `unreachable`) or answered too late (code `deadline`) after the retries."""

    def __init__(self, status: int, error: ErrorBody) -> None:
        self.status = status
        self.error = error
        super().__init__(f"the judge service answered {status} {error.code}: {error.message}")

    @property
    def code(self) -> str:
        return self.error.code


class ApiKeyRefused(JudgeClientError):
    """The service answered 401: no API key was sent (`key_sent` false) or it is not one of its keys."""

    def __init__(self, key_sent: bool) -> None:
        self.key_sent = key_sent
        what = "refused the API key" if key_sent else "needs an API key"
        message = f"the judge service {what} (401 unauthorized)"
        super().__init__(401, ErrorBody(code="unauthorized", message=message))
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """The Authorization header for `api_key` (surrounding spaces dropped; none for None or blank).

    ValueError, without the key in it, when the key is not printable ASCII (it could not be sent)."""
    key = (api_key or "").strip()
    if not key:
        return {}
    if not all(" " <= c <= "~" for c in key):
        raise ValueError("the API key must be printable ASCII (no control or non-ASCII characters)")
    return {"Authorization": f"Bearer {key}"}
