"""A thinking judge's reply split into its thinking and its JSON, and caller text kept from faking markers.

Marks and their log-probabilities are read from the reply after the thinking only: a mark written while
thinking must neither count nor hide the real one. The in-process engine splits at the end marker's
token ids (`split_tokens`); a text reply at the marker's text (`split_text`); a chat completion in the
shapes vLLM's server has used (`reply_from_fields`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from judge_service.backends.base import Generation, TokenLogprobs
from judge_service.backends.thinking_profile import THINK_END, THINK_START

_WORD_JOINER = "\u2060"  # invisible; splits a marker into tokens that are not the marker


def neutralise_markers(text: str, markers: Sequence[str]) -> str:
    """`text` with every marker broken by an invisible joiner after its first character: it reads the same
    to the judge but no longer tokenizes to the marker, so an answer cannot end the judge's thinking."""
    for marker in markers:
        if marker in text:
            text = text.replace(marker, marker[0] + _WORD_JOINER + marker[1:])
    return text


@dataclass(frozen=True)
class ReplyParts:
    """A reply split at the end of its thinking. `reasoning` None: the judge did not think; `ended` False:
    it was still thinking when the reply stopped (no JSON can follow)."""

    content: str
    reasoning: str | None = None
    ended: bool = True
    reasoning_tokens: int | None = None
    content_logprobs: tuple[TokenLogprobs, ...] | None = None
    misrouted: bool = False  # the JSON came in the reasoning field and was recovered


def with_parts(
    reply: Generation,
    parts: ReplyParts,
    *,
    completion_tokens: int | None = None,
    reasoning_tokens: int | None = None,
) -> Generation:
    """`reply` holding only what follows its thinking, the thinking apart; the token counts given override
    the reply's and the split's where the caller knows them better."""
    return replace(
        reply,
        text=parts.content,
        logprobs=parts.content_logprobs,
        reasoning=parts.reasoning,
        reasoning_tokens=reasoning_tokens if reasoning_tokens is not None else parts.reasoning_tokens,
        reasoning_ended=parts.ended,
        misrouted=parts.misrouted,
        completion_tokens=completion_tokens if completion_tokens is not None else reply.completion_tokens,
    )


def split_text(
    raw: str,
    logprobs: tuple[TokenLogprobs, ...] | None,
    *,
    start_marker: str | None,
    end_marker: str,
    opened: bool,
) -> ReplyParts:
    """Split a text reply at the last `end_marker`. `opened`: the prompt already opened the thinking block
    (the reply starts inside it). Log-probabilities are kept for the tokens after the marker only, when the
    marker ends on a token boundary (else none: the caller falls back to integer marks)."""
    at = raw.rfind(end_marker)
    starts_thinking = start_marker is not None and raw.lstrip().startswith(start_marker)
    if at < 0:
        if opened or starts_thinking:
            return ReplyParts(content="", reasoning=_strip_start(raw, start_marker), ended=False)
        return ReplyParts(content=raw, content_logprobs=logprobs)
    cut = at + len(end_marker)
    reasoning = _strip_start(raw[:at], start_marker)
    content_logprobs, thinking_tokens = _logprobs_after(logprobs, cut)
    return ReplyParts(
        content=raw[cut:],
        reasoning=reasoning,
        reasoning_tokens=thinking_tokens,
        content_logprobs=content_logprobs,
    )


def _strip_start(text: str, start_marker: str | None) -> str:
    stripped = text.lstrip()
    if start_marker and stripped.startswith(start_marker):
        return stripped[len(start_marker) :].strip()
    return text.strip()


def _logprobs_after(
    logprobs: tuple[TokenLogprobs, ...] | None, cut: int
) -> tuple[tuple[TokenLogprobs, ...] | None, int | None]:
    """The positions after character `cut`, and how many came before it; (None, None) without a token
    boundary there."""
    if logprobs is None:
        return None, None
    offset = 0
    for index, token in enumerate(logprobs):
        if offset == cut:
            return logprobs[index:], index
        offset += len(token.token)
        if offset > cut:
            return None, None
    return ((), len(logprobs)) if offset == cut else (None, None)


def split_tokens(token_ids: Sequence[int], end_ids: Sequence[int]) -> tuple[int, int] | None:
    """Where the thinking of a token reply ends: (index of the end marker, index of the first content
    token), or None when the reply holds no end marker."""
    width = len(end_ids)
    if width == 0:
        return None
    ids = list(token_ids)
    target = list(end_ids)
    for start in range(len(ids) - width, -1, -1):
        if ids[start : start + width] == target:
            return start, start + width
    return None


def reply_from_fields(
    content: str | None,
    reasoning: str | None,
    finish_reason: str | None,
    logprobs: tuple[TokenLogprobs, ...] | None,
    *,
    expects_thinking: bool,
    end_marker: str | None = THINK_END,
) -> ReplyParts:
    """A chat completion's message as ReplyParts, in every shape vLLM has used: the thinking in `reasoning`
    (0.11+) or `reasoning_content` (up to 0.10, and both in 0.11; the caller passes whichever is set), the
    JSON in `content`; or no parser on the server, the thinking inline in `content` before the end marker.

    - `content` null with finish `length` while thinking: still thinking (`ended` False).
    - `content` null with finish `stop` and a reasoning that is a JSON object: the endpoint put the reply in
      the wrong field (seen with thinking switched off through the template); it is recovered and flagged.
    - Log-probabilities cover thinking and content alike; the content's are the suffix whose text is the
      content, else none (never the thinking's).
    """
    if content is not None and end_marker and end_marker in content:
        parts = split_text(content, logprobs, start_marker=THINK_START, end_marker=end_marker, opened=False)
        return parts if reasoning is None else replace(parts, reasoning=reasoning)
    if not content:
        if reasoning is not None and finish_reason != "length" and _is_json_object(reasoning):
            return ReplyParts(content=reasoning.strip(), misrouted=True, content_logprobs=None)
        if reasoning is not None or (expects_thinking and finish_reason == "length"):
            return ReplyParts(content="", reasoning=reasoning or "", ended=False)
        return ReplyParts(content=content or "", content_logprobs=logprobs)
    if reasoning is None:
        return ReplyParts(content=content, content_logprobs=logprobs)
    suffix, before = _suffix_for(logprobs, content)
    return ReplyParts(content=content, reasoning=reasoning, reasoning_tokens=before, content_logprobs=suffix)


def _suffix_for(
    logprobs: tuple[TokenLogprobs, ...] | None, content: str
) -> tuple[tuple[TokenLogprobs, ...] | None, int | None]:
    """The positions whose joined text is `content` (whitespace around it aside; the last such run, so a
    copy in the thinking is never taken), and how many positions precede them. Positions after it that
    add no text to the content (the end-of-sequence token, kept when special tokens are) are left out.
    (None, None) where the content does not start and end on token boundaries."""
    wanted = content.strip()
    if logprobs is None or not wanted:
        return None, None
    starts: list[int] = []
    offset = 0
    for token in logprobs:
        starts.append(offset)
        offset += len(token.token)
    full = "".join(t.token for t in logprobs)
    at = full.rfind(wanted)
    if at < 0:
        return None, None
    end = at + len(wanted)
    first = next(i for i in range(len(starts) - 1, -1, -1) if starts[i] <= at)
    last = next(i for i in range(len(starts)) if starts[i] + len(logprobs[i].token) >= end)
    # Only whitespace may share a token with the content's first and last characters.
    before = full[starts[first] : at]
    after = full[end : starts[last] + len(logprobs[last].token)]
    if before.strip() or after.strip():
        return None, None
    return logprobs[first : last + 1], first


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
