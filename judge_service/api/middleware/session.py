"""Sign-in for the pages when API keys are on, and CSRF tokens for their forms.

Pages cannot send `Authorization: Bearer`, and a key must never travel in a URL, so a person signs in
once with a key (a POST form) and gets a session cookie: HttpOnly (no script reads it), SameSite=Strict
(no other site sends it), Path=/ui, Secure over HTTPS, expiring after SESSION_S. Its value is
`<payload>.<signature>`: the payload names the key (its name in keys.py, never the key), an expiry and a
random session id; the signature is an HMAC-SHA256 under the session secret (keys.py says where it
comes from). A session is only as good as its key: the auth middleware looks the name up among the keys
in force on every request, so a key removed or stripped of `read` ends its sessions.

CSRF: every form carries a token that a POST must echo. It is the HMAC of the session id (signed in) or
of a random value in a separate SameSite=Strict cookie (no keys: double submit); a cross-site page can
neither read the cookie nor compute the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

SESSION_COOKIE = "judge_session"
CSRF_COOKIE = "judge_csrf"
SESSION_S = 12 * 3600


@dataclass(frozen=True)
class Session:
    caller: str
    session_id: str
    expires_at: float


class SessionSigner:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def issue(self, caller: str, *, now: float | None = None) -> str:
        expires = int((now or time.time()) + SESSION_S)
        payload = {"c": caller, "e": expires, "s": secrets.token_urlsafe(16)}
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{body}.{self._sign(body)}"

    def verify(self, cookie: str | None, *, now: float | None = None) -> Session | None:
        if not cookie or cookie.count(".") != 1:
            return None
        body, signature = cookie.split(".")
        if not hmac.compare_digest(signature, self._sign(body)):
            return None
        try:
            payload = json.loads(_unb64(body))
            session = Session(str(payload["c"]), str(payload["s"]), float(payload["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        return session if session.expires_at > (now or time.time()) else None

    def csrf_token(self, seed: str) -> str:
        """The token forms must carry, for a session id or the CSRF cookie's random value."""
        return self._sign("csrf:" + seed)

    def csrf_valid(self, seed: str | None, token: str | None) -> bool:
        return bool(seed) and bool(token) and hmac.compare_digest(self.csrf_token(seed or ""), token or "")

    def _sign(self, text: str) -> str:
        return _b64(hmac.new(self._secret, text.encode(), hashlib.sha256).digest())


def new_csrf_seed() -> str:
    return secrets.token_urlsafe(16)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
