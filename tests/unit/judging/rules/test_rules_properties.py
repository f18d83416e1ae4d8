"""Properties every rule grader and the blend must keep, on generated text."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from judge_service.judging.base import Grade
from judge_service.judging.blend import TermGrade, blend
from judge_service.judging.registry import RULE_GRADERS, rule_grader
from judge_service.judging.rules.numbers import extract_figures
from judge_service.judging.rules.text import normalize
from judge_service.schemas import RuleOptions

OPTIONS = RuleOptions()

words = st.sampled_from(
    ["the", "Report", "größe", "Straße", "EV", "WACC", "client", "is", "~", "and", ",", ".", "\n", "1.", "2)"]
)
figures = st.sampled_from(
    [
        "9.91%",
        "$1,705M",
        "1.705B",
        "2,5 Mio.",
        "1 705,3",
        "1 705 bn",
        "$1 705 m",
        "1\u202f705 €",
        "-3.5%",
        "2024",
        "0.5",
        "12 %",
        "3",
        "1e6",
        "€1.2bn",
        "$1.7 B",
        "12 k",
        "100 m",
        "0.0991",
    ]
)
prose = st.lists(st.one_of(words, figures), max_size=40).map(" ".join)
any_text = st.one_of(prose, st.text(max_size=200))
options = st.builds(
    RuleOptions,
    case_sensitive=st.booleans(),
    normalize_whitespace=st.booleans(),
    unicode_normalization=st.sampled_from(["NFC", "NFKC", "none"]),
)

# label needs a reference among its labels; json-fields needs a reference object: both are given here.
SAFE_REFERENCE_GRADERS = ["similarity", "numbers", "exact", "contains", "json"]


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SAFE_REFERENCE_GRADERS), answer=any_text, reference=any_text, opts=options)
def test_single_grader_scores_are_in_unit_interval(
    name: str, answer: str, reference: str, opts: RuleOptions
) -> None:
    grade = rule_grader(name).grade(answer, reference, opts)
    assert grade.score is None or 0.0 <= grade.score <= 1.0
    assert grade.explanation


@settings(max_examples=60, deadline=None)
@given(answer=any_text, reference=st.sampled_from(["positive", "negative"]))
def test_label_score_in_unit_interval(answer: str, reference: str) -> None:
    grade = rule_grader("label").grade(answer, reference, RuleOptions(labels=["positive", "negative"]))
    assert grade.score in (0.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(
    answer=any_text,
    value=st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), any_text),
)
def test_json_fields_score_in_unit_interval(answer: str, value: object) -> None:
    import json

    reference = json.dumps({"a": value, "b": 1})
    score = rule_grader("json-fields").grade(answer, reference, OPTIONS).score
    assert score is not None and 0.0 <= score <= 1.0


@settings(max_examples=80, deadline=None)
@given(first=any_text, second=any_text)
def test_similarity_is_symmetric(first: str, second: str) -> None:
    grader = rule_grader("similarity")
    assert grader.grade(first, second, OPTIONS).score == grader.grade(second, first, OPTIONS).score


@settings(max_examples=80, deadline=None)
@given(text=any_text, opts=options)
def test_identical_text_scores_one(text: str, opts: RuleOptions) -> None:
    assert rule_grader("similarity").grade(text, text, opts).score == 1.0
    assert rule_grader("exact").grade(text, text, opts).score == 1.0
    if normalize(text, opts):
        assert rule_grader("contains").grade(text, text, opts).score == 1.0


@settings(max_examples=80, deadline=None)
@given(text=prose)
def test_identical_text_with_figures_scores_one_on_numbers(text: str) -> None:
    assume(extract_figures(text))
    assert rule_grader("numbers").grade(text, text, OPTIONS).score == 1.0


@settings(max_examples=80, deadline=None)
@given(score=st.floats(min_value=0.0, max_value=1.0), name=st.sampled_from(["judge", *RULE_GRADERS]))
def test_single_term_blend_with_weight_one_is_the_term(score: float, name: str) -> None:
    assert blend([TermGrade(name, 1.0, Grade(score, ""))]).score == score


@settings(max_examples=80, deadline=None)
@given(
    judge=st.floats(min_value=0.0, max_value=1.0),
    weights=st.tuples(st.floats(min_value=0.01, max_value=100), st.floats(min_value=0.01, max_value=100)),
)
def test_blend_stays_within_total_weight(judge: float, weights: tuple[float, float]) -> None:
    score = blend(
        [
            TermGrade("judge", weights[0], Grade(judge, "")),
            TermGrade.from_rule("similarity", weights[1], Grade(1.0, "")),
        ]
    ).score
    assert score is not None
    assert 0.0 <= score <= sum(weights) * (1 + 1e-12)


@pytest.mark.parametrize("name", sorted(RULE_GRADERS))
def test_grader_names_match_registry_keys(name: str) -> None:
    assert RULE_GRADERS[name].name == name
