"""Text helpers shared by the rule graders: option-driven normalization, word tokens, JSON extraction.

Word tokens (used by ROUGE-L similarity):
  1. NFKC-normalize and casefold the text (so "Größe" ~ "GRÖSSE", "ﬁ" ~ "fi", full-width digits ~ ASCII).
  2. A token is a maximal run of Unicode letters and digits (Python's str.isalnum characters).
     Punctuation, symbols, whitespace and "_" separate tokens.
  3. A '.', ',' or apostrophe (' or U+2019) *between two digits* does not split, so figures such as
     "1,705.3", "9.91", "1.705,3" and "1'000" stay one token; "report,click" still splits.
  4. Chinese characters, hiragana and katakana are one token each, as ROUGE is usually computed for
     Chinese and Japanese: these scripts put no spaces between words, so a run would be a whole clause
     ("我喜欢猫" -> 我 喜 欢 猫; "iPhone价格" -> iphone 价 格). Korean (spaced words) stays word-based.
  Known limits: combining marks that NFKC cannot compose (e.g. some Indic vowel signs) split a word;
  Thai and other unspaced scripts without this rule tokenize to whole runs.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from judge_service.schemas import RuleOptions

# Hiragana, katakana, CJK extension A, unified ideographs, compatibility ideographs, extensions B-F.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_WORD_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+(?:[.,'’](?<=\d[.,'’])(?=\d)[^\W_{_CJK}]+)*")
_WHITESPACE = re.compile(r"\s+")
_CODE_FENCE = re.compile(r"```[ \t]*(?:json|JSON|jsonc)?[ \t]*\n(.*?)```", re.DOTALL)
# Bounds the work spent looking for a JSON value inside long prose.
_MAX_JSON_START_ATTEMPTS = 64


def word_tokens(text: str) -> list[str]:
    """Split text into casefolded word tokens (rules in the module docstring)."""
    return _WORD_TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def normalize(text: str, options: RuleOptions) -> str:
    """Apply the options' Unicode normalization, then whitespace collapsing, then case folding."""
    if options.unicode_normalization != "none":
        text = unicodedata.normalize(options.unicode_normalization, text)
    if options.normalize_whitespace:
        text = _WHITESPACE.sub(" ", text).strip()
    if not options.case_sensitive:
        text = text.casefold()
    return text


def shorten(text: str, limit: int = 200) -> str:
    """Cut text to `limit` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _NonStandardConstant(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which are not JSON.
    raise _NonStandardConstant(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
# Python's decoder recurses per level and gives up near a thousand; no real answer nests that deep.
_TOO_DEEP = "not readable JSON: nested too deeply (the reader stops near 1,000 levels)"


def extract_json(text: str) -> tuple[Any, str | None]:
    """Find the JSON value a text holds: the whole text, a ```json fence, or the first {...}/[...].

    Returns (value, None) on success and (None, reason) when nothing parses; the reason names the
    decoder's first complaint about the most likely candidate. Only the whole-text form may be a bare
    scalar; inside prose only an object or array counts.
    """
    found, value, error = _decode_whole(text)
    if found:
        return value, None
    fences = _CODE_FENCE.findall(text)
    for index, fenced in enumerate(fences):
        found, value, fence_error = _decode_whole(fenced)
        if found:
            return value, None
        if index == 0:
            error = fence_error
    found, value, embedded_error = _first_embedded_value(text)
    if found:
        return value, None
    stripped = text.strip()
    if stripped and not fences and not stripped.startswith(("{", "[")):
        error = embedded_error
    return None, error


def _decode_whole(text: str) -> tuple[bool, Any, str]:
    stripped = text.strip()
    if not stripped:
        return False, None, "no JSON: the text is empty"
    try:
        return True, _DECODER.decode(stripped), ""
    except ValueError as exc:
        return False, None, f"not valid JSON: {exc}"
    except RecursionError:
        return False, None, _TOO_DEEP


def _first_embedded_value(text: str) -> tuple[bool, Any, str]:
    start = 0
    first_error = "no JSON object or array found"
    for attempt in range(_MAX_JSON_START_ATTEMPTS):
        positions = [p for p in (text.find("{", start), text.find("[", start)) if p >= 0]
        if not positions:
            break
        index = min(positions)
        try:
            value, _end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError) as exc:
            if attempt == 0:
                first_error = _TOO_DEEP if isinstance(exc, RecursionError) else f"not valid JSON: {exc}"
            start = index + 1
            continue
        return True, value, ""
    return False, None, first_error
