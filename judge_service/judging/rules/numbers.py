"""Key-figure agreement: do the answer's numbers match the reference's?

Score = mean over the reference's figures of a credit: each reference figure is matched to the answer
figure of the same kind (or a share, see below) with the smallest relative error |a - r| / |r|; credit 1
within 1%, 0.5 within 5%, else 0 (bounds inclusive). An answer figure may serve several reference
figures. A reference without figures gives Grade(score=None): the grader does not apply (never 0).

What counts as a figure
  * Decimals, percentages, amounts with currency or scale words, negative numbers ("-3.5%", also
    with the Unicode minus U+2212).
  * Kinds: "percent" ("12%", "12 %", "12 percent", "3 pp", "25 bps" = 0.25) matches only percent
    and shares; everything else is a plain number. Currency symbols and codes are kept for display
    only, so "$1,705M" matches "1,700M"; codes after the number are read in any case ("1 705 eur").
  * Shares: a plain decimal below 1 in magnitude, written with a decimal mark ("0.0991", ".5",
    "-0,035"; no currency, scale, unit or exponent), also counts as a percent of 100 times its value,
    in either text: a reference "9.91%" matches an answer "0.0991", a reference "0.0991" an answer
    "9.91%". Only shares are converted, never a percent read as a plain number, so a reference "0.5%"
    matches "0.005" but not "0.5" (= 50%), and "9.91" or "12" never match a percent. The risk taken:
    an unrelated ratio ("beta 0.12") can stand in for a percent ("12%") the answer got wrong.
  * Scales multiply: k/K/thousand/Tsd./Tausend 1e3; M/m/mn/million/Mio./Millionen 1e6;
    B/b/bn/billion/Mrd./Milliarde(n)/milliard(s) 1e9; T/tn/trillion/Bio./Billionen 1e12 (German
    "Billion" = 1e12 only in the German forms; English "billion" = 1e9). Words scale with or without a space
    ("1.705 bn", "2 Mio."), and so do letters touching the number ("5k", "1,705M"). A letter after one
    space must stand alone: then a space or the end, with at most one of .,;:!? between ("12 k.", not
    "2 M.Sc", "3 by 4", "5 M&A"). k, K, M and B then scale ("12 k", "$1.7 B"; risk: "300 K" in kelvin
    reads 300,000). m, b and T, more often units or list letters (metres, bits, tesla, "2 b)"), and
    any letter before ")" ("A) 20 B) 30") scale only after a currency ("$5 m", "($1.7 B)"); otherwise
    the number stays plain: "a 100 m sprint" is 100.
  * Bare integers 0-9 (no sign, separator, decimal, unit or scale) are not reference figures: in prose
    they are counts and ordinals ("3 steps", "option 2"). They still count as answer candidates, so a
    reference "3.0" matches an answer "3".
  * A bare 4-digit integer 1900-2100 is a year: it needs an exact match (2023 is not "within 1%" of 2024).
  * Never figures: list numbering at a line start ("1.", "2)", "(3)"), inline "(1)"/"[2]", dates
    (2024-03-15, 15.03.2024, 3/15/24), clock times (10:30), versions (1.2.3), numbers glued to letters
    ("Q3", "GPT-4", "COVID-19", "3D", "1st", "5kg").

Separators
  * Apostrophes (Swiss 1'705'000; also U+2019) and the no-break, narrow no-break and thin spaces
    (U+00A0, U+202F, U+2009, as French and German typesetting put them) always group thousands (at
    most six groups: the bound keeps the search linear on long runs of groups).
  * A plain space joins a lead of 1-3 digits with all the groups of exactly 3 digits after it (at most
    six, up to 10^21; none of them if the last is followed by a further digit, "1 705 2024") only when
      - a decimal part follows: "1 705,3";
      - a group after the lead starts with 0: "15 000", "between 2 and 3 000";
      - or the figure has a currency or unit read by the rules above, before or after it: "€ 1 705",
        "1 705 CHF", "1 705 %", "12 345 bps", "1 705 bn", "1 705 Mio.", "1 705 k", "1 705 M",
        "$1 705 m" (m, b and T only after a currency, as for any number).
    Otherwise each group is a number of its own: "100 200 300", "1 2 3", "page 12 345", "in 2019 1 705
    units" (a 4-digit year is no lead), "3 500 m sprint" (metres: no currency, so m is no scale).
    Risk taken: "$5 100 times" reads 5,100.
  * With both '.' and ',' the last one is the decimal mark ("1,705.3" = "1.705,3" = 1705.3).
  * One separator repeated is a thousands separator (1,000,000 / 1.000.000) when the groups have 3
    digits; otherwise the token is not a figure (a version or a list).
  * One separator once, followed by other than 3 digits, or after a leading 0, or after 4+ digits, is
    the decimal mark ("2,5", "9.91", "0,705").
  * The ambiguous case - one separator, exactly 3 digits after, 1-3 non-zero-led digits before ("1,705",
    "1.705") - is read in one number format for the whole group (number_format.py): the `number_locale`
    option when given; else a text's own unambiguous figures; else what the whole group says (the
    reference's figures most, scale words, currency placement, the language); else the English reading.
    `extract_figures` on a text alone reads it by its own figures and German scale words, ties English.

The explanation pairs each reference figure with its match: "~" within 1%, "≈" within 5%, "≠" beyond,
"missing" when the answer has no figure of that kind. A figure whose value is not what its digits say
in English (a scale word, a decimal comma, '.' grouping thousands) shows the value it was read as
("1.705M (=1,705,000,000)"), and where a figure was ambiguous the format used and why close the line
("read with a decimal comma: German text"); it is cut to 200 characters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar, Literal, NamedTuple

from judge_service.judging.base import Grade
from judge_service.judging.rules.number_format import (
    DecimalMark,
    Reading,
    Votes,
    group_reading,
    locale_reading,
)
from judge_service.judging.rules.text import shorten
from judge_service.schemas import RuleOptions

EXPLANATION_CHARS = 200

FigureKind = Literal["number", "percent"]

FULL_CREDIT_WITHIN = 0.01
HALF_CREDIT_WITHIN = 0.05
# Keeps "exactly 1%" on the full-credit side despite float rounding.
_EPSILON = 1e-9

_GROUP_MARKS = "\u00a0\u202f\u2009'’"
_SCALES = {
    "k": 1e3, "thousand": 1e3, "thousands": 1e3, "tsd": 1e3, "tausend": 1e3,
    "m": 1e6, "mn": 1e6, "million": 1e6, "millions": 1e6, "mio": 1e6, "millionen": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9, "billions": 1e9, "mrd": 1e9,
    "milliard": 1e9, "milliards": 1e9, "milliarde": 1e9, "milliarden": 1e9,
    "t": 1e12, "tn": 1e12, "trillion": 1e12, "trillions": 1e12, "bio": 1e12, "billionen": 1e12,
}  # fmt: skip

# Digit runs that are never figures, blanked before the search. The patterns begin with a line start
# or a character class, so that the regex engine can skip ahead quickly.
_LIST_NUMBERING = re.compile(r"^[ \t]*(?:\#+[ \t]+|[-*+•][ \t]+)?\(?\d{1,2}[.)](?=\s)", re.MULTILINE)
_REFERENCES_DATES_TIMES = re.compile(
    r"""
    [(\[\d]
    (?:
        (?<=[(\[])\d{1,2}[)\]]                                  # (1) [2]
      | (?<=\d)(?<!\w\d)                                       # a digit that starts a word, then
        (?:\d{3}-\d{1,2}-\d{1,2}                                # 2024-03-15
          | \d?[./]\d{1,2}[./]\d{2,4}                            # 15.03.2024, 3/15/24
          | \d?:\d{2}(?::\d{2})?                                 # 10:30, 10:30:15
        )(?!\w)
    )
    """,
    re.VERBOSE,
)
_UNGROUP = str.maketrans("", "", _GROUP_MARKS + " ")

_FIGURE = re.compile(
    rf"""
    (?=[-+−$€£¥A-Z.\d])                               # cheap first-character filter, for speed
    (?<![\w.,/])(?<![^\W\d_]-)                        # not glued to a word, number, fraction or "GPT-"
    (?P<sign>[-+−])?
    (?P<currency>(?:[A-Z]{{1,2}})?[$€£¥][ ]?|(?:USD|EUR|GBP|CHF|JPY)[ ]?)?
    (?P<sign_after_currency>[-+−])?
    # At most six thousands groups (up to 10^21), taken possessively: every attempt is bounded, so a
    # 20,000-character run of "234 234 ..." costs linear time, not a retry to the run's end per group.
    (?P<body>
        \d{{1,3}}(?:[{_GROUP_MARKS}]\d{{3}}){{1,6}}+(?:[.,]\d+)?
      | \d{{1,3}}(?:[ ]\d{{3}}){{1,6}}+[.,]\d+                # "1 705,3"
      | \d{{1,3}}(?=(?:[ ][1-9]\d\d){{0,5}}+[ ]0)(?:[ ]\d{{3}}){{1,6}}+  # "1 000 000": 0-led group
      | (?P<spaced>\d{{1,3}}(?:[ ]\d{{3}}){{1,6}}+)  # "1 705 M": needs a currency or unit, see below
      | \d+(?:[.,]\d+)*
      | \.\d+
    )(?!\d)(?![.,]\d)                                 # the body is maximal: no backing off "1,705x"
    (?P<exponent>[eE][-+]?\d{{1,2}})?
    (?P<unit>
        (?P<percent>[ \u00a0\u202f]?%|\s?(?ai:percent|per\s?cent|prozent|pct|percentage\s+points?|pp)\b)
      | (?P<bps>\s?(?ai:bps|bp|basis\s+points?)\b)
      | (?P<scale>
            \s?(?ai:thousands?|tausend|millions?|millionen|billions?|milliard(?:e|en|s)?|billionen|trillions?)\b
          | \s?(?ai:tsd|mio|mrd|bio)\b\.?
          | \s?(?ai:bn|mn|tn)\b
          | (?:[kKmMbB]|T)(?![^\W_])
          # spaced letter, standing alone; m/b/T and one before ")" only after a currency
          | [ \u00a0\u202f](?(currency)[kKmMbBT](?=[.,;:!?)]*(?:\s|\Z))|[kKMB](?=[.,;:!?]?(?:\s|\Z)))
        )
    )?
    (?P<currency_after>\s?(?:[€$£¥]|(?ai:eur|usd|gbp|chf|jpy|euros?|dollars?)\b))?
    # a spaced body with neither currency nor unit fails, so the match backs off to its lead: "page 12 345"
    (?(spaced)(?(currency)|(?(unit)|(?(currency_after)|(?!)))))
    (?![^\W_])                                        # "3D", "1st", "5kg" are not figures
    """,
    re.VERBOSE,
)
_GERMAN_SCALES = frozenset(
    {"tsd", "tausend", "mio", "millionen", "mrd", "milliarde", "milliarden", "bio", "billionen"}
)
_ENGLISH_SCALES = frozenset(
    {"thousand", "thousands", "million", "millions", "billion", "billions", "trillion", "trillions"}
    | {"bn", "mn", "tn"}
)
_COMMA_CURRENCY_AFTER = re.compile(r"\s?(?:€|(?ai:eur|euros?))$")
_POINT_CURRENCY_BEFORE = re.compile(r"^(?:[A-Z]{0,2}[$£]|€)")


class Figure(NamedTuple):  # a tuple: built for every number, cheaper than a frozen dataclass
    value: float
    kind: FigureKind
    text: str
    exact: bool = False  # years must match exactly
    share: bool = False  # "0.0991" can also match "9.91%"
    read_as: bool = False  # its value is not what its digits say in English: the explanation shows it


class Scan(NamedTuple):
    """A text's candidate figures (match, body without grouping marks) and its votes on the format."""

    matches: list[tuple[re.Match[str], str]]
    votes: Votes
    german_scales: int


def scan(text: str) -> Scan:
    for pattern in (_LIST_NUMBERING, _REFERENCES_DATES_TIMES):
        text = pattern.sub(_blank, text)
    matches = [(match, match["body"].translate(_UNGROUP)) for match in _FIGURE.finditer(text)]
    own = {",": 0.0, ".": 0.0}
    soft = {",": 0.0, ".": 0.0}
    german_scales = 0
    ambiguous = False
    for match, digits in matches:
        if digits.isdigit():  # most figures: no separator, no vote, nothing ambiguous
            pass
        elif decimal := _unambiguous_decimal_mark(digits):
            own[decimal] += 1
        elif not match["exponent"] and _is_ambiguous_body(digits):
            ambiguous = True
        if match["scale"]:
            key = _scale_key(match["scale"])
            if key in _GERMAN_SCALES:
                german_scales += 1
                soft[","] += 1
            elif key in _ENGLISH_SCALES:
                soft["."] += 0.5
        if match["currency_after"] and _COMMA_CURRENCY_AFTER.search(match["currency_after"]):
            soft[","] += 0.5
        elif match["currency"] and _POINT_CURRENCY_BEFORE.match(match["currency"]):
            soft["."] += 0.5
    votes = Votes(own[","], own["."], soft[","], soft["."], ambiguous)
    return Scan(matches, votes, german_scales)


def extract_figures(
    text: str, *, include_small_integers: bool = False, decimal: DecimalMark | None = None
) -> list[Figure]:
    """All figures in `text` (rules in the module docstring), in order of appearance; ambiguous ones read
    with `decimal`, else by the text's own figures and German scale words (ties: the English reading)."""
    return figures_of(scan(text), decimal, include_small_integers)


def figures_of(
    scanned: Scan, decimal: DecimalMark | None, include_small_integers: bool = False
) -> list[Figure]:
    if decimal is None:
        votes = scanned.votes
        decimal = "," if votes.own_comma + scanned.german_scales > votes.own_point else "."
    figures = []
    for match, digits in scanned.matches:
        figure = _to_figure(match, digits, decimal == ",", include_small_integers)
        if figure is not None:
            figures.append(figure)
    return figures


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


@lru_cache(maxsize=64)
def _reference_scan(reference: str) -> Scan:
    # A group's answers share one reference: scan it once.
    return scan(reference)


@lru_cache(maxsize=64)
def _reference_figures(reference: str, decimal: DecimalMark) -> tuple[Figure, ...]:
    return tuple(figures_of(_reference_scan(reference), decimal))


def _to_figure(
    match: re.Match[str], digits: str, comma_decimal: bool, include_small_integers: bool
) -> Figure | None:
    """`digits` is the match's body without its thousands-grouping spaces and apostrophes."""
    magnitude = _parse_body(digits, comma_decimal and not match["exponent"])
    if magnitude is None:
        return None
    # Read otherwise than its digits say in English: scaled, or "1.705" read with a decimal comma (only the
    # ambiguous case reads differently in the two formats: _parse_body).
    read_as = bool(match["scale"]) or (comma_decimal and _is_ambiguous_body(digits))
    unmarked = not (match["currency"] or match["currency_after"] or match["exponent"] or match["unit"])
    if unmarked and not match["sign"] and digits.isdigit():
        if magnitude < 10 and not include_small_integers:
            return None
        if len(digits) == 4 and 1900 <= magnitude <= 2100:
            return Figure(magnitude, "number", match.group(0).strip(), exact=True, read_as=read_as)
    value = magnitude * 10.0 ** int(match["exponent"][1:]) if match["exponent"] else magnitude
    if match["scale"]:
        value *= _SCALES[_scale_key(match["scale"])]
    if match["bps"]:
        value /= 100
    if {match["sign"], match["sign_after_currency"]} & {"-", "−"}:
        value = -value
    if not math.isfinite(value):  # a few hundred digits overflow a float: not a figure anyone checks
        return None
    kind: FigureKind = "percent" if match["percent"] or match["bps"] else "number"
    share = unmarked and magnitude < 1 and not digits.isdigit()
    return Figure(value, kind, match.group(0).strip(), share=share, read_as=read_as)


def _parse_body(body: str, comma_decimal: bool) -> float | None:
    """The number an ungrouped body ("1705,3", "1,705.3") stands for; None if none (e.g. 1.2.3)."""
    if body.startswith("."):
        return float("0" + body)
    separators = {c for c in body if c in ".,"}
    if not separators:
        return float(body)
    if len(separators) == 2:
        decimal = "." if body.rfind(".") > body.rfind(",") else ","
        thousands = "," if decimal == "." else "."
        whole, _, fraction = body.rpartition(decimal)
        if decimal in whole or not _valid_groups(whole.split(thousands)):
            return None
        return float(whole.replace(thousands, "") + "." + fraction)
    (separator,) = separators
    parts = body.split(separator)
    if len(parts) > 2:
        return float("".join(parts)) if _valid_groups(parts) else None
    whole, fraction = parts
    if _is_ambiguous(whole, fraction) and (separator == ",") != comma_decimal:
        return float(whole + fraction)
    return float(whole + "." + fraction)


def _valid_groups(groups: list[str]) -> bool:
    return 1 <= len(groups[0]) <= 3 and all(len(group) == 3 for group in groups[1:])


def _is_ambiguous(whole: str, fraction: str) -> bool:
    """'1,705' or '1.705': thousands or decimal depends on the number format."""
    return len(fraction) == 3 and 1 <= len(whole) <= 3 and not whole.startswith("0")


def _is_ambiguous_body(body: str) -> bool:
    separators = [c for c in body if c in ".,"]
    if len(separators) != 1:
        return False
    whole, fraction = body.split(separators[0])
    return _is_ambiguous(whole, fraction)


def _scale_key(scale: str) -> str:
    return scale.strip().rstrip(".").casefold()


def _unambiguous_decimal_mark(body: str) -> str | None:
    if body.startswith("."):
        return "."
    separators = {c for c in body if c in ".,"}
    if len(separators) == 2:
        return "." if body.rfind(".") > body.rfind(",") else ","
    if len(separators) != 1:
        return None
    (separator,) = separators
    parts = body.split(separator)
    if len(parts) > 2:
        return ("," if separator == "." else ".") if _valid_groups(parts) else None
    return None if _is_ambiguous(*parts) else separator


def match_credit(relative_error: float) -> float:
    if relative_error <= FULL_CREDIT_WITHIN + _EPSILON:
        return 1.0
    if relative_error <= HALF_CREDIT_WITHIN + _EPSILON:
        return 0.5
    return 0.0


def _relative_error(answer: float, reference: float) -> float:
    if answer == reference:
        return 0.0
    return abs(answer - reference) / abs(reference) if reference else math.inf


def _closest(
    reference: Figure, same_kind: list[Figure], converted: list[Figure]
) -> tuple[Figure | None, float]:
    """The nearest candidate: `same_kind` compared as is, `converted` as percents (ties: same kind)."""
    best: Figure | None = None
    best_error = math.inf
    for candidate in same_kind:
        error = _relative_error(candidate.value, reference.value)
        if error < best_error:
            best, best_error = candidate, error
    target = _as_percent(reference)
    for candidate in converted:
        error = _relative_error(_as_percent(candidate), target)
        if error < best_error:
            best, best_error = candidate, error
    return best, best_error


def _as_percent(figure: Figure) -> float:
    return figure.value * 100 if figure.share else figure.value


class NumbersGrader:
    """Alone (`grade`), an answer and its reference are the group; the service grades whole groups
    (`grade_group`), so that every answer is read in the group's number format."""

    name = "numbers"
    # In the fingerprint beside the options: scores since figures are read in one format per group.
    config: ClassVar[dict[str, str]] = {"number_format": "per group"}

    def grade(self, answer: str, reference: str, options: RuleOptions) -> Grade:
        return self.grade_group([answer], reference, "", options)[0]

    def grade_group(
        self, answers: Sequence[str], reference: str, context: str, options: RuleOptions
    ) -> list[Grade]:
        """`context`: the conversation's text, which tells the group's language."""
        # Whether the reference has figures does not depend on how they read: answered before any answer
        # is scanned (a blend's reference without figures costs no more than before).
        if not _reference_figures(reference, "."):
            grade = Grade(score=None, explanation="reference has no figures; numbers grader does not apply")
            return [grade] * len(answers)
        reference_scan = _reference_scan(reference)
        answer_scans = [scan(answer) for answer in answers]
        reading = _reading(reference, reference_scan, answers, answer_scans, context, options)
        reference_decimal = _decimal_of(reference_scan, reading)
        wanted = _reference_figures(reference, reference_decimal)
        grades = []
        for scanned in answer_scans:
            decimal = _decimal_of(scanned, reading)
            note = ""
            if reference_scan.votes.ambiguous or scanned.votes.ambiguous:
                note = _format_note(reading, reference_scan, reference_decimal, scanned, decimal)
            grades.append(_grade(wanted, figures_of(scanned, decimal, include_small_integers=True), note))
        return grades


def _reading(
    reference: str,
    reference_scan: Scan,
    answers: Sequence[str],
    answer_scans: list[Scan],
    context: str,
    options: RuleOptions,
) -> Reading | None:
    """The format for texts whose own figures do not decide; None when no text needs one."""
    if options.number_locale != "auto":
        return locale_reading(
            options.number_locale
            if isinstance(options.number_locale, str)
            else options.number_locale.model_dump()
        )
    scans = [reference_scan, *answer_scans]
    if not any(s.votes.ambiguous and s.votes.own is None for s in scans):
        return None
    votes = [s.votes for s in answer_scans]
    return group_reading(reference_scan.votes, votes, reference, context, list(answers))


def _decimal_of(scanned: Scan, reading: Reading | None) -> DecimalMark:
    if reading is not None and reading.overrides:
        return reading.decimal
    own = scanned.votes.own
    if own is not None:
        return own
    return reading.decimal if reading is not None else "."


def _format_note(
    reading: Reading | None,
    reference: Scan,
    reference_decimal: DecimalMark,
    answer: Scan,
    decimal: DecimalMark,
) -> str:
    """Which format the reference and the answer were read in, and why, in a few words."""

    def why(scanned: Scan) -> str:
        if reading is not None and (scanned.votes.own is None or reading.overrides):
            return reading.why
        return "its own figures"

    def name(mark: DecimalMark) -> str:
        return "decimal comma" if mark == "," else "decimal point"

    reference_why, answer_why = why(reference), why(answer)
    if reference_decimal != decimal:
        return (
            f"reference: {name(reference_decimal)} ({reference_why}); answer: {name(decimal)} ({answer_why})"
        )
    if reference_why == answer_why:
        return f"read with a {name(decimal)} ({answer_why})"
    # Same mark, different reasons: one of the two was read by its own figures.
    if answer_why == "its own figures":
        return f"read with a {name(decimal)} ({reference_why}; the answer by its own figures)"
    return f"read with a {name(decimal)} (the reference by its own figures; the answer by {answer_why})"


def _grade(wanted: Sequence[Figure], offered: list[Figure], note: str) -> Grade:
    numbers = [figure for figure in offered if figure.kind == "number"]
    percents = [figure for figure in offered if figure.kind == "percent"]
    shares = [figure for figure in numbers if figure.share]
    credits: list[float] = []
    pairs: list[str] = []
    for figure in wanted:
        if figure.kind == "percent":
            match, error = _closest(figure, percents, shares)
        else:
            match, error = _closest(figure, numbers, percents if figure.share else [])
        credit = (1.0 if error <= _EPSILON else 0.0) if figure.exact else match_credit(error)
        credits.append(credit)
        pairs.append(_describe(figure, match, credit))
    full, half = credits.count(1.0), credits.count(0.5)
    summary = f"{full}/{len(wanted)} figures within 1%" + (f", {half} within 5%" if half else "")
    tail = f"; {note}" if note else ""
    room = max(EXPLANATION_CHARS - len(summary) - 2 - len(tail), 20)
    explanation = f"{summary}: {shorten(', '.join(pairs), room)}{tail}"
    return Grade(score=sum(credits) / len(credits), explanation=shorten(explanation, EXPLANATION_CHARS))


def _describe(figure: Figure, match: Figure | None, credit: float) -> str:
    if match is None:
        return f"{_shown(figure)} missing"
    sign = {1.0: "~", 0.5: "≈"}.get(credit, "≠")
    return f"{_shown(figure)}{sign}{_shown(match)}"


def _shown(figure: Figure) -> str:
    """The figure as written, and the value it was read as where that is not what its digits say."""
    if not figure.read_as:
        return figure.text
    value = figure.value
    number = f"{int(value):,}" if value == int(value) and abs(value) < 1e18 else f"{value:,.10g}"
    return f"{figure.text} (={number})"
