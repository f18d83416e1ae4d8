"""The comparison graders, `pairwise` and `knockout` (judging/comparison/; docs/graders/comparison.md):
their options and what a judgement records of them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge_service.schemas.common import MAX_ANSWERS, ResponseModel, StrictModel

PairwiseScore = Literal["bt", "winrate"]


class ComparisonOptions(StrictModel):
    """For the `pairwise` and `knockout` graders (docs/graders/comparison.md)."""

    both_orders: bool = Field(
        default=True, description="pairwise: judge each pair in both orders (position bias cancels)."
    )
    max_pairs: int = Field(
        default=32,
        ge=1,
        le=MAX_ANSWERS * (MAX_ANSWERS - 1) // 2,
        description="pairwise: at most this many pairs; above it every answer meets the same number of "
        "opponents, chosen by the seed.",
    )
    pairwise_score: PairwiseScore = Field(
        default="bt",
        description="pairwise: 'bt', the Bradley-Terry expected win rate against the group; or 'winrate'.",
    )


COMPARISON_DESCRIPTION = "Options of the comparison graders (`pairwise`, `knockout`)."


class ComparisonTally(ResponseModel):
    """An answer's record under a comparison grader: pairwise counts comparisons, knockout matches."""

    wins: int
    losses: int
    ties: int
    failed: int = Field(description="Comparisons of this answer that gave no verdict (left out).")
    byes: int | None = Field(default=None, description="knockout: rounds it went through without a match.")


class ComparisonRecord(ResponseModel):
    """One comparison a comparison grader made, as stored with the judgement."""

    first: str = Field(description="The answer shown first (as A).")
    second: str = Field(description="The answer shown second (as B).")
    verdict: dict[str, int] | None = Field(
        description="Per criterion, 1 (A much better) to 5 (B much better), 3 even; null when it failed."
    )
    preference: float | None = Field(description="How far B was preferred, 0-1 (0.5 even); null when failed.")
    reason: str | None = None
    error: str | None = Field(default=None, description="Why it gave no verdict.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    round: int | None = Field(default=None, description="knockout: the round (1 = the first).")
