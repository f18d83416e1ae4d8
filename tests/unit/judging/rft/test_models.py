"""RFT grader configs as they are parsed: numbers a config carries are finite (a 422 from the routes),
so nothing infinite reaches a reward or a stored request."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge_service.judging.rft.grader import parse_config

SCORE_MODEL = {
    "type": "score_model",
    "name": "s",
    "model": "judge",
    "input": [{"role": "user", "content": "x"}],
}


@pytest.mark.parametrize(
    "numbers",
    [{"range": [0, float("inf")]}, {"range": [float("-inf"), 1]}, {"pass_threshold": float("nan")}],
)
def test_a_score_model_refuses_numbers_that_are_not_finite(numbers: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="finite"):
        parse_config(SCORE_MODEL | numbers)


def test_a_finite_range_is_kept() -> None:
    parsed = parse_config(SCORE_MODEL | {"range": [1, 7], "pass_threshold": 5})
    assert parsed.score_range == (1.0, 7.0)  # type: ignore[attr-defined]
