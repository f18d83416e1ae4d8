import pytest

from judge_service.graders.registry import (
    ALL_GRADER_NAMES,
    blend_terms,
    check_term_names,
    grader_terms,
    rule_grader,
)

RULE_NAMES = ["similarity", "numbers", "exact", "contains", "json", "label", "json-fields"]


@pytest.mark.parametrize("name", RULE_NAMES)
def test_rule_graders_by_name(name: str) -> None:
    assert rule_grader(name).name == name


def test_all_names() -> None:
    assert set(ALL_GRADER_NAMES) == {"judge", *RULE_NAMES, "judge+similarity", "judge+numbers"}


def test_unknown_rule_grader_lists_valid_names() -> None:
    with pytest.raises(ValueError, match=r"unknown rule grader 'rouge'.*similarity, numbers"):
        rule_grader("rouge")


def test_judge_is_not_a_rule_grader() -> None:
    with pytest.raises(ValueError, match="LLM judge"):
        rule_grader("judge")


def test_blends() -> None:
    assert blend_terms("judge+similarity") == [("judge", 0.7), ("similarity", 0.3)]
    assert blend_terms("judge+numbers") == [("judge", 0.5), ("numbers", 0.5)]
    assert blend_terms("similarity") is None


def test_grader_terms() -> None:
    assert grader_terms("judge") == [("judge", 1.0)]
    assert grader_terms("numbers") == [("numbers", 1.0)]
    assert grader_terms("judge+numbers") == [("judge", 0.5), ("numbers", 0.5)]
    with pytest.raises(ValueError, match="valid graders: judge"):
        grader_terms("nope")


def test_check_term_names() -> None:
    check_term_names(["judge", "similarity"])
    with pytest.raises(ValueError, match="'judge\\+numbers'"):
        check_term_names(["judge+numbers"])
