"""Cascades: a rule grader first, the judge where it changes the reward (docs/graders/cascades.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge_service.schemas.common import StrictModel


class CascadeOptions(StrictModel):
    """Rules first, the judge where they say nothing (docs/graders/cascades.md)."""

    rule: str = Field(min_length=1, max_length=64, description="The rule grader that scores first.")
    judge: Literal["ties", "verify"] = Field(
        description="'ties': the judge (the request's grader) scores the groups the rule leaves flat; "
        "'verify': the judge checks the answers that reach `threshold`, which score rule x its correctness."
    )
    threshold: float = Field(default=1.0, ge=0, le=1, description="verify: the rule score that is checked.")


CASCADE_DESCRIPTION = "A rule grader first, and the judge (`grader`) only where it changes the reward."

CascadePath = Literal["rule_only", "judged"]
ScoredBy = Literal["rule", "judge", "rule+judge"]
