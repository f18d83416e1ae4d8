"""The hosted fine-tuning API's grader routes, in their request and response shapes, so that the openai
package's `client.fine_tuning.alpha.graders.run(...)` and `.validate(...)` work with `base_url` pointed at
this service (the routes themselves are in router.py).

A config that cannot score the sample is answered as the hosted API answers it: reward 0, with the flag
that says why set in `metadata.errors` (a caller of this route reads the flags; a named grader in a group
leaves the answer unscored instead).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge_service.judging.rft.models import RftGrader
from judge_service.judging.rft.run import RftOutcome
from judge_service.schemas import MAX_TEXT_CHARS, Item


class GraderRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grader: RftGrader
    model_sample: str = Field(max_length=MAX_TEXT_CHARS, description="Fills the sample namespace.")
    item: Item | None = Field(default=None, description="Fills the item namespace.")


class GraderValidateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grader: RftGrader


def run_reply(grader: BaseModel, outcome: RftOutcome) -> dict[str, Any]:
    name = getattr(grader, "name", "")
    scores: dict[str, Any] = dict(outcome.sub_rewards)
    if outcome.reward is not None and not scores:
        scores[name] = outcome.reward
    usage_per_model: dict[str, Any] = {}
    if outcome.model:
        usage_per_model[outcome.model] = {"total_tokens": outcome.token_usage}
    return {
        "reward": outcome.reward if outcome.reward is not None else 0.0,
        "sub_rewards": dict(outcome.sub_rewards),
        "metadata": {
            "name": name,
            "type": getattr(grader, "type", ""),
            "errors": outcome.error_flags(),
            "execution_time": outcome.execution_time,
            "scores": scores,
            "token_usage": outcome.token_usage if outcome.model else None,
            "sampled_model_name": outcome.model,
        },
        "model_grader_token_usage_per_model": usage_per_model,
    }
