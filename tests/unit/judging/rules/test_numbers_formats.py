"""Figures read as their writers meant them: one number format per group (judging/rules/number_format.py),
the `number_locale` override, and explanations that say what was read."""

from __future__ import annotations

import pytest

from judge_service.judging.rules.numbers import NumbersGrader
from judge_service.schemas import NumberFormat, RuleOptions

AUTO = RuleOptions()
GERMAN_RIGHT = [
    ("Der Unternehmenswert beträgt 1.705M.", "Der Wert liegt bei 1,705B."),  # the German guide's example
    ("Der Preis ist 1.250 €.", "Er kostet 1250 Euro."),
    ("Wir rechnen mit 0,5 Mio. Euro.", "Es sind 500.000 Euro."),
    ("Die Lieferung umfasst 12.500 Stück.", "Es sind 12500 Stück."),
]
GERMAN_WRONG = [  # a thousand times off: rewarded before figures were read per group
    ("Der Preis ist 1.250 €.", "Er kostet 1,25 Euro."),
    ("Die Lieferung umfasst 12.500 Stück.", "Es sind 12,5 Stück."),
]
ENGLISH_RIGHT = [
    ("The enterprise value is 1,705M.", "The value is 1.705B."),
    ("The price is 1,250 €.", "It costs 1250 euros."),
    ("We expect 0.5 million euros.", "It is 500,000 euros."),
    ("The delivery is 12,500 pieces.", "It is 12500 pieces."),
]


def score(reference: str, answer: str, options: RuleOptions = AUTO) -> float | None:
    return NumbersGrader().grade(answer, reference, options).score


@pytest.mark.parametrize(("reference", "answer"), GERMAN_RIGHT + ENGLISH_RIGHT)
def test_right_figures_score_one_in_german_and_in_english(reference: str, answer: str) -> None:
    assert score(reference, answer) == 1.0


@pytest.mark.parametrize(("reference", "answer"), GERMAN_WRONG)
def test_figures_a_thousand_times_off_score_zero(reference: str, answer: str) -> None:
    assert score(reference, answer) == 0.0


def test_an_answer_in_the_other_style_that_is_unambiguous_is_read_its_own_way() -> None:
    assert score("Der Wert beträgt 1.705,5 Euro.", "The value is 1,705.5 euros.") == 1.0
    assert score("The value is 1,705.5 euros.", "Der Wert beträgt 1.705,5 Euro.") == 1.0
    # its own figures decide even where the group writes German: 1,705.5 and 1.705 are one style
    assert score("Der Preis ist 1.705 Euro.", "Es sind 1,705.5 oder 1.705 Euro.") == 1.0


@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("Le prix est de 1 705,5 euros.", "Il coûte 1705,5 euros."),  # French: spaces group thousands
        ("Le prix est de 1\u202f705,5 euros.", "Il coûte 1 705,50 euros."),
        ("Der Preis beträgt 1'705.50 CHF.", "Er kostet 1705.5 CHF."),  # Swiss: apostrophes group
    ],
)
def test_french_and_swiss_figures(reference: str, answer: str) -> None:
    assert score(reference, answer) == 1.0


def test_the_group_decides_what_a_pair_alone_could_not() -> None:
    grader = NumbersGrader()
    reference = "Lieferung: 12.500 Stück"  # no word that tells the language
    # alone, nothing decides: the English reading, 12.5 against 12500
    assert grader.grade("12500", reference, AUTO).score == 0.0
    # the conversation is German: so is the group's format
    question = "Wie viele Stück werden geliefert, und wann kommen sie?"
    grades = grader.grade_group(["12500", "12.500", "12,5"], reference, question, AUTO)
    assert [g.score for g in grades] == [1.0, 1.0, 0.0]
    assert all("decimal comma" in g.explanation for g in grades)


def test_the_conversation_tells_the_language_when_the_texts_do_not() -> None:
    grader = NumbersGrader()
    german = grader.grade_group(["1250"], "1.250", "Was kostet das Gerät und wie teuer ist es?", AUTO)
    english = grader.grade_group(["1250"], "1.250", "What does the device cost and how much is it?", AUTO)
    assert (german[0].score, english[0].score) == (1.0, 0.0)


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("de", 1.0),
        ("fr", 1.0),
        ("en", 0.0),
        ("ch", 0.0),
        (NumberFormat(decimal=",", thousands="."), 1.0),
        (NumberFormat(decimal=".", thousands=","), 0.0),
    ],
)
def test_number_locale_overrides_the_guess(locale: object, expected: float) -> None:
    options = RuleOptions.model_validate({"number_locale": locale})
    # English words around a German figure: auto reads the group in English
    assert score("The total is 1.250 pieces.", "It is 1250 pieces.") == 0.0
    grade = NumbersGrader().grade("It is 1250 pieces.", "The total is 1.250 pieces.", options)
    assert grade.score == expected
    assert "number_locale" in grade.explanation


def test_number_locale_is_checked() -> None:
    with pytest.raises(ValueError, match="must differ"):
        RuleOptions.model_validate({"number_locale": {"decimal": ",", "thousands": ","}})
    with pytest.raises(ValueError):
        RuleOptions.model_validate({"number_locale": "es"})


def test_texts_that_disagree_with_nothing_deciding_are_read_the_english_way() -> None:
    grade = NumbersGrader().grade("Value 1,705", "Value 1.705", AUTO)
    assert grade.score == 0.0  # 1.705 against 1705
    assert "decimal point (nothing decides: the English reading)" in grade.explanation


def test_the_explanation_shows_the_value_each_figure_was_read_as() -> None:
    reference, answer = GERMAN_RIGHT[0]
    grade = NumbersGrader().grade(answer, reference, AUTO)
    assert "1.705M (=1,705,000,000)~1,705B (=1,705,000,000)" in grade.explanation
    assert grade.explanation.endswith("read with a decimal comma (German text)")
    plain = NumbersGrader().grade("growth 9.95%", "growth 9.91%", AUTO).explanation
    assert plain == "1/1 figures within 1%: 9.91%~9.95%"  # nothing ambiguous: nothing to say


def test_the_note_survives_a_long_explanation() -> None:
    reference = "Der Umsatz ist " + ", ".join(f"{i}.500 Stück" for i in range(100, 160))
    grade = NumbersGrader().grade(reference, reference, AUTO)
    assert grade.score == 1.0
    assert len(grade.explanation) <= 200
    assert grade.explanation.endswith("read with a decimal comma (German text)")
