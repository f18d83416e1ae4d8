"""The graders a service offers (GET /v1/graders), and the terms of a blend."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge_service.schemas.common import ResponseModel, StrictModel
from judge_service.schemas.thinking import ThinkingInfo


class GraderTerm(StrictModel):
    grader: str = Field(min_length=1, max_length=64, description="Name of a registered single grader.")
    weight: float = Field(gt=0, le=100, description="Not normalized: the blend is the plain weighted sum.")


GraderKind = Literal["judge", "comparison", "jury", "rule", "code", "rft", "blend"]


class GraderInfo(ResponseModel):
    name: str
    kind: GraderKind
    fingerprint: str | None = Field(
        description="The grader fingerprint of a request naming this grader with default options."
    )
    runs_model: bool
    thinking: ThinkingInfo | None = Field(default=None, description="The judge: how its model thinks.")
    target: str | None = Field(default=None, description="Code graders: package.module:function.")
    signature: str | None = Field(default=None, description="Code graders: rft, verl or group.")
    source_sha256: str | None = Field(
        default=None,
        description="Code graders: hash of the function's module source; RFT configs: of the config.",
    )
    version: str | None = Field(
        default=None, description="Code graders: the installed distribution's version."
    )
    terms: list[GraderTerm] | None = Field(default=None, description="Blends: their terms.")


class GraderList(ResponseModel):
    items: list[GraderInfo]
