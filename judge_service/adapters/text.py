"""Trainer text as the service takes it: C0 control characters and lone surrogates removed (the service
refuses them; a policy under training can emit them), and a message's content as one text."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")  # C0 controls, lone surrogates


def clean(text: str) -> str:
    return _CONTROL.sub("", text)


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return clean(content)
    if isinstance(content, Sequence):
        parts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return clean("\n".join(part for part in parts if part))
    return clean(str(content))
