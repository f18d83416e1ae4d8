"""Optional API keys: `Authorization: Bearer <key>` on every route but the probes (pure ASGI middleware).

Off unless JUDGE_API_KEYS lists keys (comma-separated; several at once so keys can be rotated). The
presented token is compared with every key, each through SHA-256 and `hmac.compare_digest`, without
stopping at a match: the time taken does not reveal which key matched, how many characters did, or a
key's length. Keys are never logged or echoed; a 401 says only what to send.

An accepted request carries its caller's identity in scope["state"]["caller"]: the first 16 hex digits of
the key's SHA-256, which names the key without revealing it. Idempotency keys are scoped by it, so
tenants sharing the service cannot collide (service/idempotency.py).

The pages under /ui also accept the signed session cookie their sign-in sets (session.py); without
either, a page request is sent to the sign-in page (a GET) or refused 401 (anything else).
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlencode

from pydantic import SecretStr
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from judge_service.api.errors import error_response
from judge_service.api.middleware.session import SESSION_COOKIE, SessionSigner
from judge_service.api.paths import METRICS, PROBES

_REALM = 'Bearer realm="judge-service"'
_CALLER = "caller"  # in scope["state"], where Starlette's request.state reads
PAGES = "/ui"
SIGN_IN = "/ui/signin"


def parse_keys(raw: SecretStr | str | None) -> list[str]:
    """JUDGE_API_KEYS as a list: comma-separated, surrounding spaces and empty entries dropped."""
    text = raw.get_secret_value() if isinstance(raw, SecretStr) else raw or ""
    return [key.strip() for key in text.split(",") if key.strip()]


def public_paths(metrics_public: bool) -> frozenset[str]:
    """Routes answered without a key: the probes, and /metrics unless JUDGE_METRICS_PUBLIC=false."""
    return PROBES | {METRICS} if metrics_public else PROBES


class KeyRing:
    """The configured keys, as digests: checks a presented key (module docstring) and signs sessions."""

    def __init__(self, keys: list[str]) -> None:
        self._digests = [hashlib.sha256(key.encode()).digest() for key in keys]
        self.sessions = SessionSigner(keys)

    @property
    def enabled(self) -> bool:
        return bool(self._digests)

    def caller_for(self, token: str) -> str | None:
        """The caller identity of a valid key, None for any other text."""
        presented = hashlib.sha256(token.encode()).digest()
        matched = False
        for digest in self._digests:  # every key, always: no early exit
            matched |= hmac.compare_digest(presented, digest)
        return caller_identity(token) if matched else None


class ApiKeyAuth:
    def __init__(self, app: ASGIApp, keys: KeyRing, public_paths: frozenset[str]) -> None:
        self.app = app
        self._keys = keys
        self._public = public_paths | {SIGN_IN}

    @property
    def enabled(self) -> bool:
        return self._keys.enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] not in ("http", "websocket") or scope["path"] in self._public:
            await self.app(scope, receive, send)
            return
        token = _bearer_token(scope)
        caller = self._keys.caller_for(token) if token is not None else None
        page = scope["path"] == PAGES or scope["path"].startswith(PAGES + "/")
        if caller is None and page:
            session = self._keys.sessions.verify(cookie(scope, SESSION_COOKIE))
            caller = session.caller if session is not None else None
        if caller is not None:
            # A fresh dict, never the server's lifespan state: the identity must not leak to other requests.
            scope["state"] = {**scope.get("state", {}), _CALLER: caller}
            await self.app(scope, receive, send)
            return
        if page and scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            target = scope["path"] + (
                "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""
            )
            location = SIGN_IN + "?" + urlencode({"next": target})
            await RedirectResponse(location, status_code=303)(scope, receive, send)
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


def cookie(scope: Scope, name: str) -> str | None:
    for header, value in scope.get("headers", ()):
        if header == b"cookie":
            jar = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:
                return None
            if name in jar:
                return jar[name].value
    return None


def _bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None
