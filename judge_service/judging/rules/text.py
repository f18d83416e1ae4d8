"""Text helpers shared by the rule graders: option-driven normalization and word tokens (JSON extraction is
judging/json_text.py, shared with the judge's parser).

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

import re
import unicodedata

from judge_service.schemas import RuleOptions

# Hiragana, katakana, CJK extension A, unified ideographs, compatibility ideographs, extensions B-F.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_WORD_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+(?:[.,'’](?<=\d[.,'’])(?=\d)[^\W_{_CJK}]+)*")
_WHITESPACE = re.compile(r"\s+")


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
