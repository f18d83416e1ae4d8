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

Before any of that, keys on or off and on every route, the request must name the service by a host it
answers to (hosts.py): 400 host_not_allowed otherwise (DNS rebinding).
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlencode

from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from judge_service.api.errors import error_response
from judge_service.api.middleware.hosts import HostPolicy
from judge_service.api.middleware.keys import KeyRing, Principal, Scope
from judge_service.api.middleware.session import SESSION_COOKIE
from judge_service.api.paths import METRICS, PROBES

_REALM = 'Bearer realm="judge-service"'
_PRINCIPAL = "principal"  # in scope["state"], where Starlette's request.state reads
PAGES = "/ui"
SIGN_IN = "/ui/signin"


def public_paths(metrics_public: bool) -> frozenset[str]:
    """Routes answered without a key: the probes, and /metrics unless JUDGE_METRICS_PUBLIC=false."""
    return PROBES | {METRICS} if metrics_public else PROBES


class ApiKeyAuth:
    def __init__(self, app: ASGIApp, keys: KeyRing, public_paths: frozenset[str], hosts: HostPolicy) -> None:
        self.app = app
        self._keys = keys
        self._public = public_paths | {SIGN_IN}
        self._hosts = hosts

    @property
    def enabled(self) -> bool:
        return self._keys.enabled

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = self._hosts.refused(scope)
            if host is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await self._hosts.refusal(host)(scope, receive, send)
                return
        if not self.enabled or scope["type"] not in ("http", "websocket") or scope["path"] in self._public:
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        principal = self._keys.principal_for(token) if token is not None else None
        page = scope["path"] == PAGES or scope["path"].startswith(PAGES + "/")
        if principal is None and page:
            session = self._keys.sessions.verify(cookie(scope, SESSION_COOKIE))
            principal = self._keys.principal_named(session.caller) if session is not None else None
            if principal is not None and not principal.may(Scope.READ):
                principal = None  # a session is only as good as its key's scopes now
        if principal is not None:
            # A fresh dict, never the server's lifespan state: the identity must not leak to other requests.
            scope["state"] = {**scope.get("state", {}), _PRINCIPAL: principal}
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
            message = (
                "the API key is not valid; send a key configured in JUDGE_API_KEYS or JUDGE_API_KEYS_FILE"
            )
            challenge = _REALM + ', error="invalid_token"'
        response = error_response(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)


def principal_of(scope: ASGIScope) -> Principal | None:
    """The key that authenticated the request; None without API keys (or on a public route)."""
    principal: Principal | None = scope.get("state", {}).get(_PRINCIPAL)
    return principal


def caller_of(scope: ASGIScope) -> str | None:
    """The name of the key that authenticated the request (never the key); None without API keys."""
    principal = principal_of(scope)
    return principal.name if principal is not None else None


def cookie(scope: ASGIScope, name: str) -> str | None:
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


def bearer_token(scope: ASGIScope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None
