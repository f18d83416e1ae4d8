"""Who holds which key: each accepted API key as a named principal with scopes and its own share limits.

Two sources, used together:
- JUDGE_API_KEYS: the keys themselves (comma-separated). Each may do everything (every scope); its name is
  the first 16 hex digits of its SHA-256 (`key_identity`), which names it without revealing it.
- JUDGE_API_KEYS_FILE: a JSON file of named keys, each given by the hex of its SHA-256 (the file holds no
  secret), with scopes and optional per-key limits (api/shares.py):

      {"keys": [{"name": "trainer-a", "sha256": "<64 hex>", "scopes": ["judge", "read"],
                 "max_groups_in_flight": 64, "groups_per_minute": 6000}]}

  `sha256` may be a list: the old and the new key of a rotation, both accepted under one name (so
  idempotency keys and page sessions carry over). The file is read again when it changes (checked at
  most once a second); a change that does not parse is logged and the keys in force stay.

A presented key is compared with every configured digest through `hmac.compare_digest`, without stopping
at a match: the time taken does not reveal which key matched, how many characters did, or its length.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, ValidationError

from judge_service.api.middleware.session import SessionSigner

log = logging.getLogger(__name__)

RELOAD_EVERY_S = 1.0


class Scope(StrEnum):
    """What a key may do (api/scopes.py says which route needs which)."""

    JUDGE = "judge"  # judge, batch, member and compat routes: the training loop
    READ = "read"  # GET routes and the run pages
    LABEL = "label"  # a person's labels
    ADMIN = "admin"  # regrade, calibration, agreement, rubric edits, pruning
    PYTHON = "python"  # inline python graders: code of the caller's, run in the sandbox


ALL_SCOPES = frozenset(Scope)


@dataclass(frozen=True)
class ShareLimits:
    """A key's fair share of one replica (api/shares.py); None is no limit."""

    max_groups_in_flight: int | None = None
    groups_per_minute: int | None = None


@dataclass(frozen=True)
class Principal:
    """An accepted key, as the service knows it: by name, never by the key."""

    name: str
    scopes: frozenset[Scope]
    limits: ShareLimits = field(default_factory=ShareLimits)

    def may(self, scope: Scope) -> bool:
        return scope in self.scopes


_HEX_DIGEST = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F]{64}$")]
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class KeyEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="Shown in logs, metrics and stored judgements.")
    sha256: _HEX_DIGEST | list[_HEX_DIGEST] = Field(
        description="Hex SHA-256 of the key; a list during a rotation (old and new)."
    )
    scopes: list[Scope] = Field(min_length=1)
    max_groups_in_flight: int | None = Field(default=None, ge=1)
    groups_per_minute: int | None = Field(default=None, ge=1)

    def digests(self) -> list[str]:
        return [d.lower() for d in ([self.sha256] if isinstance(self.sha256, str) else self.sha256)]


class KeysFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[KeyEntry]


def parse_keys(raw: SecretStr | str | None) -> list[str]:
    """JUDGE_API_KEYS as a list: comma-separated, surrounding spaces and empty entries dropped."""
    text = raw.get_secret_value() if isinstance(raw, SecretStr) else raw or ""
    return [key.strip() for key in text.split(",") if key.strip()]


def key_identity(key: str) -> str:
    """A non-secret name for an API key: stable across restarts, different per key, never the key."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def read_keys_file(path: Path, defaults: ShareLimits) -> list[tuple[bytes, Principal]]:
    """The file's keys as (digest, principal); ValueError saying what to fix for a file that is not valid."""
    try:
        parsed = KeysFile.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"JUDGE_API_KEYS_FILE {path}: cannot be read ({exc.strerror})") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"JUDGE_API_KEYS_FILE {path}: {problems}") from None
    names = [entry.name for entry in parsed.keys]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"JUDGE_API_KEYS_FILE {path}: name(s) {', '.join(repeated)} appear more than once; give a "
            "rotation's keys as one entry with a list of sha256"
        )
    entries: list[tuple[bytes, Principal]] = []
    for entry in parsed.keys:
        given = entry.model_fields_set
        limits = ShareLimits(
            entry.max_groups_in_flight if "max_groups_in_flight" in given else defaults.max_groups_in_flight,
            entry.groups_per_minute if "groups_per_minute" in given else defaults.groups_per_minute,
        )
        principal = Principal(entry.name, frozenset(entry.scopes), limits)
        entries.extend((bytes.fromhex(digest), principal) for digest in entry.digests())
    return entries


class KeyRing:
    """The keys in force: checks a presented key (module docstring) and signs page sessions."""

    def __init__(
        self,
        keys: Iterable[str] = (),
        *,
        keys_file: Path | None = None,
        defaults: ShareLimits | None = None,
        session_secret: SecretStr | None = None,
    ) -> None:
        self._defaults = defaults or ShareLimits()
        self._plain = [
            (hashlib.sha256(key.encode()).digest(), Principal(key_identity(key), ALL_SCOPES, self._defaults))
            for key in keys
        ]
        self._file = keys_file
        self._file_stamp: tuple[int, int] | None = None
        self._checked_at = 0.0
        self._entries = list(self._plain)
        if keys_file is not None:
            self._load(read_keys_file(keys_file, self._defaults), self._stamp())
        self.sessions = SessionSigner(_session_secret(session_secret, list(keys), keys_file))

    @property
    def enabled(self) -> bool:
        return bool(self._entries) or self._file is not None

    def principal_for(self, token: str) -> Principal | None:
        """The principal of a valid key, None for any other text."""
        self.refresh()
        presented = hashlib.sha256(token.encode()).digest()
        found: Principal | None = None
        for digest, principal in self._entries:  # every key, always: no early exit
            if hmac.compare_digest(presented, digest):
                found = principal
        return found

    def principal_named(self, name: str) -> Principal | None:
        """The principal a page session names, as the keys in force say now (scopes may have changed)."""
        self.refresh()
        return next((p for _, p in self._entries if p.name == name), None)

    def refresh(self, *, now: float | None = None) -> None:
        """Read the keys file again if it changed (at most once per RELOAD_EVERY_S)."""
        if self._file is None:
            return
        now = time.monotonic() if now is None else now
        if now - self._checked_at < RELOAD_EVERY_S:
            return
        self._checked_at = now
        stamp = self._stamp()
        if stamp == self._file_stamp:
            return
        try:
            entries = read_keys_file(self._file, self._defaults)
        except ValueError as exc:
            log.error("keys file not reloaded, the keys in force stay: %s", exc)
            self._file_stamp = stamp  # logged once per change, not once a second
            return
        self._load(entries, stamp)
        log.info("keys file reloaded: %d key(s)", len(self._entries))

    def _load(self, file_entries: list[tuple[bytes, Principal]], stamp: tuple[int, int] | None) -> None:
        plain = {digest for digest, _ in self._plain}
        clash = sorted({p.name for digest, p in file_entries if digest in plain})
        if clash:
            raise ValueError(
                f"JUDGE_API_KEYS_FILE: key(s) named {', '.join(clash)} are also in JUDGE_API_KEYS; "
                "list each key in one place"
            )
        self._entries = self._plain + file_entries
        self._file_stamp = stamp

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self._file) if self._file is not None else None
        except OSError:
            return None
        return None if info is None else (info.st_mtime_ns, info.st_size)


def _session_secret(configured: SecretStr | None, keys: list[str], keys_file: Path | None) -> bytes:
    """What signs page sessions. JUDGE_SESSION_SECRET if set; else derived from JUDGE_API_KEYS (every
    replica with the same keys agrees, and rotating them ends every session). A keys file holds only
    hashes, which anyone reading it knows, so with a keys file alone the secret is random per process
    (said in the log): a session then lasts as long as the replica that signed it."""
    if configured is not None:
        return hashlib.sha256(b"judge-service pages\n" + configured.get_secret_value().encode()).digest()
    if keys:
        return hashlib.sha256(b"judge-service pages\n" + "\n".join(sorted(keys)).encode()).digest()
    if keys_file is not None:
        log.warning(
            "page sign-in sessions are signed with a random secret of this process: set "
            "JUDGE_SESSION_SECRET so that sessions survive restarts and work on every replica"
        )
    return os.urandom(32)
