"""Optional API keys: `Authorization: Bearer <key>` on every route but the probes (pure ASGI middleware).

Off unless JUDGE_API_KEYS lists keys (comma-separated; several at once so keys can be rotated). The
presented token is compared with every key, each through SHA-256 and `hmac.compare_digest`, without
stopping at a match: the time taken does not reveal which key matched, how many characters did, or a
key's length. Keys are never logged or echoed; a 401 says only what to send.

An accepted request carries its caller's identity in scope["state"]["caller"]: the first 16 hex digits of
the key's SHA-256, which names the key without revealing it. Idempotency keys are scoped by it, so
tenants sharing the service cannot collide (judge_service/idempotency.py).
"""

from __future__ import annotations

import hashlib
import hmac

from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from judge_service.api.errors import error_response

_REALM = 'Bearer realm="judge-service"'
_CALLER = "caller"  # in scope["state"], where Starlette's request.state reads


def parse_keys(raw: SecretStr | str | None) -> list[str]:
    """JUDGE_API_KEYS as a list: comma-separated, surrounding spaces and empty entries dropped."""
    text = raw.get_secret_value() if isinstance(raw, SecretStr) else raw or ""
    return [key.strip() for key in text.split(",") if key.strip()]


def public_paths(metrics_public: bool) -> frozenset[str]:
    """Routes answered without a key: the probes, and /metrics unless JUDGE_METRICS_PUBLIC=false."""
    return frozenset({"/healthz", "/readyz", *(["/metrics"] if metrics_public else [])})


class ApiKeyAuth:
    def __init__(self, app: ASGIApp, keys: list[str], public_paths: frozenset[str]) -> None:
        self.app = app
        self._digests = [hashlib.sha256(key.encode()).digest() for key in keys]
        self._public = public_paths

    @property
    def enabled(self) -> bool:
        return bool(self._digests)

    def _valid(self, token: str) -> bool:
        presented = hashlib.sha256(token.encode()).digest()
        matched = False
        for digest in self._digests:  # every key, always: no early exit
            matched |= hmac.compare_digest(presented, digest)
        return matched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] not in ("http", "websocket") or scope["path"] in self._public:
            await self.app(scope, receive, send)
            return
        token = _bearer_token(scope)
        if token is not None and self._valid(token):
            # A fresh dict, never the server's lifespan state: the identity must not leak to other requests.
            scope["state"] = {**scope.get("state", {}), _CALLER: caller_identity(token)}
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if token is None:
            message = "this service needs an API key: send the header 'Authorization: Bearer <key>'"
            challenge = _REALM
        else:
            message = "the API key is not valid; send one of the keys configured in JUDGE_API_KEYS"
            challenge = _REALM + ', error="invalid_token"'
        response = error_response(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)


def caller_identity(key: str) -> str:
    """A non-secret name for an API key: stable across restarts, different per key, never the key."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def caller_of(scope: Scope) -> str | None:
    """The identity of the API key that authenticated the request; None without API keys."""
    caller: str | None = scope.get("state", {}).get(_CALLER)
    return caller


def _bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None
