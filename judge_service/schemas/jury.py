"""The `jury` grader (judging/jury/; docs/graders/juries.md): its options and what a judgement records of
each judge."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from judge_service.schemas.common import ResponseModel, StrictModel, Usage, _refuse_duplicates

JuryAggregate = Literal["mean", "median", "min", "mean_minus_std"]
JUROR_NAME_PATTERN = r"^[a-z][a-z0-9_\-]{0,31}$"
MAX_JURORS = 8


class JuryOptions(StrictModel):
    """For the `jury` grader: which of JUDGE_JURY's judges, and how their scores become one
    (docs/graders/juries.md)."""

    judges: list[Annotated[str, Field(pattern=JUROR_NAME_PATTERN)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_JURORS,
        description="The judges, in order (escalation calls them in it). Default: all of JUDGE_JURY.",
    )
    aggregate: JuryAggregate = Field(
        default="mean",
        description="'mean' and 'median' (weighted), 'min', or 'mean_minus_std': the mean less `std_factor` "
        "standard deviations, so an answer the judges dispute scores lower.",
    )
    std_factor: float = Field(default=1.0, ge=0, le=4, description="mean_minus_std: the factor.")
    escalate: float | None = Field(
        default=None,
        gt=0,
        le=4,
        description="Escalation: the first two judges mark the group, and the others are called only where "
        "some answer's scores from them are more than this many marks apart (1-5 scale). Off by default.",
    )

    @model_validator(mode="after")
    def _unique(self) -> JuryOptions:
        _refuse_duplicates("jury judge", self.judges or [])
        return self


JURY_DESCRIPTION = "Options of the `jury` grader (JUDGE_JURY)."


class AnswerJury(ResponseModel):
    """An answer under the `jury` grader: each judge's score beside the aggregate."""

    scores: dict[str, float] = Field(
        description="Judge name -> its 0-1 score, for the judges that scored it."
    )
    missing: dict[str, str] = Field(
        default_factory=dict,
        description="Judge name -> why it gave no score: not called (its judges agreed), or its error.",
    )
    spread: float | None = Field(
        description="How many marks apart (1-5 scale) the highest and lowest score are; null below two."
    )
    aggregate: JuryAggregate


class JurorRecord(ResponseModel):
    """What one judge of a jury did for a group, as stored with the judgement."""

    name: str
    model: str
    weight: float
    called: bool = Field(description="False: not called, because the first judges agreed.")
    escalation: bool = Field(default=False, description="Called because the first judges disagreed.")
    prompt_version: str | None = None
    error: str | None = Field(default=None, description="Why it gave no marks for the group.")
    raw_outputs: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=lambda: Usage())
    judge_ms: float = 0.0
