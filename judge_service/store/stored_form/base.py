"""What every stored model shares, and the usage counts that a judgement and each juror carry."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Stored(BaseModel):
    # extra="ignore": a document written by a newer build (a field this build does not know) still loads.
    model_config = ConfigDict(extra="ignore", from_attributes=True)


class UsageV1(Stored):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_calls: int = 0
    reasoning_tokens: int = 0
