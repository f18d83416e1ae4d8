import pytest

from judge_service.judging.base import Grade
from judge_service.judging.blend import TermGrade, blend, effective_weights

NO_FIGURES = Grade(None, "reference has no figures; numbers grader does not apply")


def test_judge_plus_similarity() -> None:
    result = blend(
        [TermGrade("judge", 0.7, Grade(0.8, "")), TermGrade.from_rule("similarity", 0.3, Grade(0.45, ""))]
    )
    assert result.score == pytest.approx(0.7 * 0.8 + 0.3 * 0.45)
    assert result.explanation == "judge 0.80 x0.7 + similarity 0.45 x0.3"


def test_weights_are_not_normalized() -> None:
    score, _ = blend([TermGrade("judge", 2, Grade(1.0, "")), TermGrade.from_rule("exact", 1, Grade(1.0, ""))])
    assert score == 3.0


@pytest.mark.parametrize("judge_score", [0.0, 0.1, 0.3, 0.8, 1.0, 0.123456789])
def test_not_applying_term_leaves_exactly_the_judge(judge_score: float) -> None:
    score, explanation = blend(
        [TermGrade("judge", 0.5, Grade(judge_score, "")), TermGrade.from_rule("numbers", 0.5, NO_FIGURES)]
    )
    assert score == judge_score
    assert explanation == f"judge {judge_score:.2f} x1; numbers does not apply"


def test_rescaling_keeps_the_total_weight() -> None:
    terms = [
        TermGrade("judge", 2.0, Grade(0.5, "")),
        TermGrade.from_rule("similarity", 1.0, Grade(1.0, "")),
        TermGrade.from_rule("numbers", 1.0, NO_FIGURES),
    ]
    weights = effective_weights(terms)
    assert weights[2] is None
    assert sum(w for w in weights if w is not None) == pytest.approx(4.0)
    assert blend(terms).score == pytest.approx(4 / 3 * 2 * 0.5 + 4 / 3 * 1.0)


def test_failed_term_makes_the_blend_unscored() -> None:
    result = blend(
        [
            TermGrade("judge", 0.5, Grade(None, "no mark for this answer")),
            TermGrade.from_rule("numbers", 0.5, Grade(1.0, "")),
        ]
    )
    assert result.score is None
    assert result.explanation == "unscored: judge failed (no mark for this answer)"


def test_nothing_applies() -> None:
    assert blend([TermGrade.from_rule("numbers", 1.0, NO_FIGURES)]).score is None
    assert blend([]).score is None


@pytest.mark.parametrize(
    "term",
    [
        TermGrade("judge", 0.0, Grade(0.5, "")),
        TermGrade("judge", -1.0, Grade(0.5, "")),
        TermGrade("judge", float("nan"), Grade(0.5, "")),
        TermGrade("judge", 1.0, Grade(1.5, "")),
        TermGrade("judge", 1.0, Grade(float("nan"), "")),
    ],
)
def test_invalid_terms(term: TermGrade) -> None:
    with pytest.raises(ValueError, match="blend term 'judge'"):
        blend([term])
