"""Hashing helpers: the canonical JSON spelling and its hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any, *, ascii_only: bool = True) -> str:
    """The one canonical JSON spelling: sorted keys, no spaces. What hashes and compares JSON uses it. The
    two spellings are pinned by what is stored: request hashes (Idempotency-Key) and member groups' fields
    escape non-ASCII (`ascii_only`); grader fingerprints keep it as UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii_only)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
