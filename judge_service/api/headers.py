"""Request headers shared by several routes."""

from __future__ import annotations

from typing import Any

from fastapi import Header


def idempotency_key_header(description: str) -> Any:
    """The Idempotency-Key header parameter, with what a retry under the same key does on this route."""
    return Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e]+$",
        description=f"{description} 1-255 visible ASCII characters, e.g. a UUID. With API keys on, each "
        "API key has keys of its own.",
    )
