"""Which number format a group writes in: how its ambiguous figures ("1.705", "500.000", "1,250") are read.

A figure with one separator followed by exactly three digits is ambiguous alone: "1.705" is 1705 in
German and 1.705 in English. The numbers grader reads every text of a group in one format, decided from
everything the group says, since a German answer rarely carries the evidence that its reference does:

1. `number_locale` (a rule option) names the format outright: `en` and `ch` read a decimal point, `de`
   and `fr` a decimal comma, `{"decimal": ",", "thousands": "."}` any pair. Otherwise (`auto`):
2. a text whose own unambiguous figures vote for one decimal mark ("9,91 %", "1.705,5", "1,705.5",
   "1.000.000") is read its own way, whatever the group does;
3. any other text is read in the group's format: the side with more weight among
   - unambiguous figures, each one vote for its decimal mark;
   - scale words: German ones (Tsd., Mio., Mrd., Millionen, ...) one vote for the comma, English ones
     (thousand, million, bn, ...) half a vote for the point;
   - currency placement: an amount followed by €, EUR or Euro half a vote for the comma, one after $, £,
     US$ or € half a vote for the point ("€1.2bn" is how English writes euros);
   - the language of the text, one vote: German, French, Spanish, Italian, Dutch and Portuguese write a
     decimal comma, English a decimal point (found by common short words; a text with none decides
     nothing). The answers' language counts only where the reference and the conversation show none.
   The reference's votes count three times (it is the text the figures are checked against), the
   conversation's and each answer's once.
4. When nothing decides (no votes, or a tie), the English reading: ',' groups thousands, '.' is the
   decimal mark. The reading and the reason are said in the grader's explanation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from judge_service.judging.language import LANGUAGE_NAMES, language_of

DecimalMark = Literal[".", ","]

REFERENCE_WEIGHT = 3.0

LOCALE_DECIMAL: dict[str, DecimalMark] = {"en": ".", "ch": ".", "de": ",", "fr": ","}


@dataclass(frozen=True)
class Votes:
    """One text's evidence for a decimal mark (numbers.scan counts it). `own_*`: its unambiguous figures
    (rule 2); `soft_*`: scale words and currency placement (rule 3)."""

    own_comma: float = 0.0
    own_point: float = 0.0
    soft_comma: float = 0.0
    soft_point: float = 0.0
    ambiguous: bool = False  # the text holds a figure whose reading depends on the format

    @property
    def own(self) -> DecimalMark | None:
        if self.own_comma > self.own_point:
            return ","
        if self.own_point > self.own_comma:
            return "."
        return None


@dataclass(frozen=True)
class Reading:
    """The decimal mark a group's undecided texts are read with, and why (for the explanation)."""

    decimal: DecimalMark
    why: str
    overrides: bool = False  # named by number_locale: every text is read so, its own figures aside


@lru_cache(maxsize=256)
def cached_language(text: str) -> str | None:
    # A group's answers share one reference and one conversation: read their language once.
    return language_of(text)


def locale_reading(locale: str | dict[str, str]) -> Reading:
    if isinstance(locale, str):
        return Reading(LOCALE_DECIMAL[locale], f"number_locale {locale}", overrides=True)
    return Reading("," if locale["decimal"] == "," else ".", "number_locale", overrides=True)


def group_reading(
    reference: Votes,
    answers: list[Votes],
    reference_text: str,
    context_text: str,
    answer_texts: list[str],
) -> Reading:
    """Rules 3 and 4 of the module docstring."""
    evidence = [  # (what, votes for the comma, votes for the point)
        (
            "reference figures",
            REFERENCE_WEIGHT * (reference.own_comma + reference.soft_comma),
            REFERENCE_WEIGHT * (reference.own_point + reference.soft_point),
        ),
        (
            "answer figures",
            sum(v.own_comma + v.soft_comma for v in answers),
            sum(v.own_point + v.soft_point for v in answers),
        ),
    ]
    languages = [(cached_language(reference_text), REFERENCE_WEIGHT), (cached_language(context_text), 1.0)]
    if not any(language for language, _ in languages):
        languages = [(language_of(text), 1.0) for text in answer_texts]
    for language, weight in languages:
        if language is not None:
            name = f"{LANGUAGE_NAMES[language]} text"
            evidence.append((name, 0.0, weight) if language == "en" else (name, weight, 0.0))
    comma = sum(c for _, c, _ in evidence)
    point = sum(p for _, _, p in evidence)
    if comma == point:
        return Reading(".", "nothing decides: the English reading")
    decimal: DecimalMark = "," if comma > point else "."
    reasons: list[str] = []
    for what, for_comma, for_point in evidence:
        if (for_comma if decimal == "," else for_point) > 0 and what not in reasons:
            reasons.append(what)
    return Reading(decimal, ", ".join(reasons))
