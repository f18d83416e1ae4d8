"""The pages' signed session and CSRF tokens (api/middleware/session.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from judge_service.api.middleware.keys import KeyRing
from judge_service.api.middleware.session import SESSION_S, SessionSigner


def test_a_session_verifies_until_it_expires_and_only_under_the_same_keys() -> None:
    signer = KeyRing(["k1", "k2"]).sessions
    cookie = signer.issue("caller-a", now=1000.0)
    session = signer.verify(cookie, now=1000.0 + SESSION_S - 1)
    assert session is not None and session.caller == "caller-a"
    assert signer.verify(cookie, now=1000.0 + SESSION_S + 1) is None  # expired
    assert KeyRing(["k2", "k1"]).sessions.verify(cookie, now=1001.0) is not None  # same keys, any order
    assert KeyRing(["k1"]).sessions.verify(cookie, now=1001.0) is None  # keys rotated: sessions end
    body, signature = cookie.split(".")
    assert signer.verify(f"{body}x.{signature}", now=1001.0) is None
    assert signer.verify("garbage", now=1001.0) is None and signer.verify(None) is None


def test_a_session_secret_is_shared_by_replicas_and_a_keys_file_alone_gives_none(tmp_path: Path) -> None:
    """A keys file holds only hashes, which anyone reading it knows: it cannot sign sessions. Without
    JUDGE_SESSION_SECRET each process signs with its own random secret; with it every replica agrees."""
    keys_file = tmp_path / "keys.json"
    keys_file.write_text('{"keys": [{"name": "n", "sha256": "' + "0" * 64 + '", "scopes": ["read"]}]}')
    cookie = KeyRing(keys_file=keys_file).sessions.issue("n", now=1000.0)
    assert KeyRing(keys_file=keys_file).sessions.verify(cookie, now=1001.0) is None
    secret = SecretStr("shared secret")
    cookie = KeyRing(keys_file=keys_file, session_secret=secret).sessions.issue("n", now=1000.0)
    assert KeyRing(keys_file=keys_file, session_secret=secret).sessions.verify(cookie, now=1001.0) is not None


def test_csrf_tokens_bind_to_their_seed() -> None:
    signer = SessionSigner(b"k" * 32)
    token = signer.csrf_token("seed-1")
    assert signer.csrf_valid("seed-1", token)
    assert not signer.csrf_valid("seed-2", token)
    assert not signer.csrf_valid(None, token) and not signer.csrf_valid("seed-1", "")
