"""The pages' signed session and CSRF tokens (api/middleware/session.py)."""

from __future__ import annotations

from judge_service.api.middleware.session import SESSION_S, SessionSigner


def test_a_session_verifies_until_it_expires_and_only_under_the_same_keys() -> None:
    signer = SessionSigner(["k1", "k2"])
    cookie = signer.issue("caller-a", now=1000.0)
    session = signer.verify(cookie, now=1000.0 + SESSION_S - 1)
    assert session is not None and session.caller == "caller-a"
    assert signer.verify(cookie, now=1000.0 + SESSION_S + 1) is None  # expired
    assert SessionSigner(["k2", "k1"]).verify(cookie, now=1001.0) is not None  # same keys, any order
    assert SessionSigner(["k1"]).verify(cookie, now=1001.0) is None  # keys rotated: sessions end
    body, signature = cookie.split(".")
    assert signer.verify(f"{body}x.{signature}", now=1001.0) is None
    assert signer.verify("garbage", now=1001.0) is None and signer.verify(None) is None


def test_csrf_tokens_bind_to_their_seed() -> None:
    signer = SessionSigner(["k"])
    token = signer.csrf_token("seed-1")
    assert signer.csrf_valid("seed-1", token)
    assert not signer.csrf_valid("seed-2", token)
    assert not signer.csrf_valid(None, token) and not signer.csrf_valid("seed-1", "")
