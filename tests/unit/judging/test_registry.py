from typing import Any

import pytest

from judge_service.errors import InvalidGroupError
from judge_service.judging.base import AnswerGrade, Group, GroupGrades
from judge_service.judging.registry import GraderRegistry, rule_grader
from judge_service.schemas import JudgeRequest


class NamedGrader:
    """The smallest Grader: stands in for the LLM judge where only its name matters."""

    runs_model = True

    def __init__(self, name: str = "judge") -> None:
        self.name = name

    def options(self, request: JudgeRequest) -> None:
        return None

    def config(self, options: Any) -> dict[str, Any]:
        return {}

    async def grade(self, group: Group, options: Any) -> GroupGrades:
        return GroupGrades({a.id: AnswerGrade(1.0, "fine") for a in group.answers})


REGISTRY = GraderRegistry.with_rule_graders(NamedGrader())
grader_terms = REGISTRY.grader_terms
blend_terms = REGISTRY.blend_terms
check_term_names = REGISTRY.check_term_names

RULE_NAMES = ["similarity", "numbers", "exact", "contains", "json", "label", "json-fields"]


@pytest.mark.parametrize("name", RULE_NAMES)
def test_rule_graders_by_name(name: str) -> None:
    assert rule_grader(name).name == name


def test_all_names() -> None:
    assert set(REGISTRY.names) == {"judge", *RULE_NAMES, "judge+similarity", "judge+numbers"}


def test_unknown_rule_grader_lists_valid_names() -> None:
    with pytest.raises(ValueError, match=r"unknown rule grader 'rouge'.*similarity, numbers"):
        rule_grader("rouge")


def test_judge_is_not_a_rule_grader() -> None:
    with pytest.raises(ValueError, match="unknown rule grader 'judge'"):
        rule_grader("judge")


def test_without_the_judge_its_blends_are_not_offered() -> None:
    rules_only = GraderRegistry.with_rule_graders()
    assert "judge+similarity" not in rules_only.names and "similarity" in rules_only.names
    request = JudgeRequest.model_validate(
        {
            "conversation": [{"role": "user", "content": "q"}],
            "reference": "r",
            "answers": [{"id": "a", "text": "t"}],
        }
    )
    with pytest.raises(InvalidGroupError, match="unknown grader 'judge'"):
        rules_only.plan(request)


def test_two_graders_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two graders are named 'similarity'"):
        GraderRegistry.with_rule_graders(NamedGrader("similarity"))


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
