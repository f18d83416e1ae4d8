"""Grader names: the rule graders by name, the named blends as data, and what a name resolves to.

"judge" is the LLM judge. It is a valid grader and blend-term name, but the service runs it; this
module knows only that the name exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from judge_service.graders.base import RuleGrader
from judge_service.graders.checks import (
    ContainsGrader,
    ExactGrader,
    JsonFieldsGrader,
    JsonGrader,
    LabelGrader,
)
from judge_service.graders.numbers import NumbersGrader
from judge_service.graders.similarity import SimilarityGrader

JUDGE = "judge"

# The graders are stateless, so one shared instance of each is safe.
RULE_GRADERS: Mapping[str, RuleGrader] = MappingProxyType(
    {
        grader.name: grader
        for grader in (
            SimilarityGrader(),
            NumbersGrader(),
            ExactGrader(),
            ContainsGrader(),
            JsonGrader(),
            LabelGrader(),
            JsonFieldsGrader(),
        )
    }
)

BLENDS: Mapping[str, tuple[tuple[str, float], ...]] = MappingProxyType(
    {
        "judge+similarity": ((JUDGE, 0.7), ("similarity", 0.3)),
        "judge+numbers": ((JUDGE, 0.5), ("numbers", 0.5)),
    }
)

SINGLE_GRADER_NAMES: tuple[str, ...] = (JUDGE, *RULE_GRADERS)
ALL_GRADER_NAMES: tuple[str, ...] = (*SINGLE_GRADER_NAMES, *BLENDS)


def rule_grader(name: str) -> RuleGrader:
    """The rule grader called `name`; ValueError for "judge", a blend or an unknown name."""
    try:
        return RULE_GRADERS[name]
    except KeyError:
        if name == JUDGE:
            raise ValueError("'judge' is the LLM judge, not a rule grader") from None
        raise ValueError(f"unknown rule grader {name!r}; rule graders: {', '.join(RULE_GRADERS)}") from None


def blend_terms(name: str) -> list[tuple[str, float]] | None:
    """The (grader, weight) terms of the named blend, or None when `name` is not a blend."""
    terms = BLENDS.get(name)
    return list(terms) if terms is not None else None


def grader_terms(name: str) -> list[tuple[str, float]]:
    """What a request's `grader` name runs: a blend's terms, or [(name, 1.0)] for a single grader.

    ValueError names the valid choices when `name` is unknown.
    """
    terms = blend_terms(name)
    if terms is not None:
        return terms
    if name in SINGLE_GRADER_NAMES:
        return [(name, 1.0)]
    raise ValueError(f"unknown grader {name!r}; valid graders: {', '.join(ALL_GRADER_NAMES)}")


def check_term_names(names: list[str]) -> None:
    """ValueError unless every name is a single grader (blend terms cannot nest blends)."""
    unknown = [name for name in names if name not in SINGLE_GRADER_NAMES]
    if unknown:
        raise ValueError(
            f"unknown term grader(s) {', '.join(map(repr, unknown))}; "
            f"terms may use: {', '.join(SINGLE_GRADER_NAMES)}"
        )
