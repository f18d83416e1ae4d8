"""An RFT grader config as a named Grader (JUDGE_RFT_GRADERS): run on every answer of a group, with the
request's `item` as the item namespace and each answer as the sample.

A config that cannot score an answer leaves it unscored with its error flag, never 0. The reward must be
a 0-1 score, as the hosted API's are; a lone score_model's `range` is mapped onto 0-1, and a multi grader's
formula is the caller's to keep within it (a reward outside leaves the answer unscored, said so).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from judge_service.judging.base import AnswerGrade, Group, GroupGrades, ModelRun
from judge_service.judging.code.spec import GRADER_NAME_PATTERN, json_setting
from judge_service.judging.rft.models import MultiGrader, RftGrader, ScoreModelGrader, runs_model
from judge_service.judging.rft.run import RftOutcome, RftRunner
from judge_service.schemas import JudgeRequest, Usage, canonical_json

_CONFIG: TypeAdapter[Any] = TypeAdapter(RftGrader)


def parse_rft_graders(setting: str) -> dict[str, BaseModel]:
    """JUDGE_RFT_GRADERS: a JSON object of grader name -> config, inline or in a file. ValueError says
    what to fix."""
    raw, source = json_setting(setting, "JUDGE_RFT_GRADERS", "object")
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: a JSON object of grader name -> RFT grader config")
    configs: dict[str, BaseModel] = {}
    for name, config in raw.items():
        if not re.match(GRADER_NAME_PATTERN, name):
            raise ValueError(f"{source}: grader name {name!r} must match {GRADER_NAME_PATTERN}")
        try:
            configs[name] = _CONFIG.validate_python(config)
        except ValidationError as exc:
            raise ValueError(f"{source}: grader {name!r}: {exc}") from exc
    return configs


def parse_config(config: Any) -> BaseModel:
    """One RFT grader config (ValidationError when it is not one)."""
    return _CONFIG.validate_python(config)


class RftConfigGrader:
    """Grader[None] over one RFT config."""

    def __init__(self, name: str, config: BaseModel, runner: RftRunner) -> None:
        self._name = name
        self.config_model = config
        self._runner = runner
        self.runs_model = runs_model(config)
        self._canonical = canonical_json(config.model_dump(mode="json"), ascii_only=False)
        self.config_sha256 = hashlib.sha256(self._canonical.encode()).hexdigest()

    @property
    def name(self) -> str:
        return self._name

    def options(self, request: JudgeRequest) -> None:
        return None

    def config(self, options: None) -> Mapping[str, Any]:
        return {f"rft:{self._name}": json.loads(self._canonical)}

    async def grade(self, group: Group, options: None) -> GroupGrades:
        item = dict(group.item or {})
        outcomes = await asyncio.gather(
            *(self._runner.run(self.config_model, a.text, item) for a in group.answers)
        )
        grades = {
            answer.id: self._grade(outcome) for answer, outcome in zip(group.answers, outcomes, strict=True)
        }
        run = None
        if self.runs_model:
            tokens = sum(outcome.token_usage for outcome in outcomes)
            model = next((o.model for o in outcomes if o.model), "")
            run = ModelRun(
                model=model,
                prompt_version=f"rft:{self._name}@{self.config_sha256[:12]}",
                usage=Usage(completion_tokens=0, prompt_tokens=tokens, judge_calls=len(outcomes)),
            )
        return GroupGrades(grades, run)

    def _grade(self, outcome: RftOutcome) -> AnswerGrade:
        explanation = outcome.explanation(self.config_model)
        if outcome.reward is None:
            return AnswerGrade(None, explanation)
        reward = outcome.reward
        if isinstance(self.config_model, ScoreModelGrader):
            low, high = self.config_model.score_range
            reward = (reward - low) / (high - low)
        if not 0.0 <= reward <= 1.0:
            return AnswerGrade(
                None,
                f"other_error: the reward {outcome.reward:g} is outside 0-1; scale it in calculate_output",
            )
        details = {"sub_rewards": outcome.sub_rewards} if isinstance(self.config_model, MultiGrader) else None
        return AnswerGrade(reward, explanation, details=details)
