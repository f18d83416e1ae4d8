"""JUDGE_JURY: the judges of a jury, each an OpenAI-compatible endpoint or the service's own engine.

The setting is a JSON list, inline or in a file (its path):

  [{"name": "qwen", "engine": "local"},
   {"name": "llama", "base_url": "http://llama:8000/v1", "model": "meta-llama/Llama-3.1-8B-Instruct"},
   {"name": "gemma", "base_url": "http://gemma:8000/v1", "model": "google/gemma-2-9b-it", "weight": 0.5}]

`engine: "local"` is the judge the service runs itself (JUDGE_BACKEND: the in-process engine by default);
at most one entry may be. Per-judge settings, where a judge differs from the service's: `weight` (in the
mean, median and mean_minus_std aggregates), `temperature`, `prompt_template` (JUDGE_PROMPT_TEMPLATE),
`api_key`, `timeout_s`. Everything else (reason length, retries, answer shuffling) is the service's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, TypeAdapter, model_validator

from judge_service.judging.code.spec import named_list

JUROR_NAME_PATTERN = r"^[a-z][a-z0-9_\-]{0,31}$"


class JurorSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=JUROR_NAME_PATTERN, description="The judge's name in requests and results.")
    engine: Literal["local"] | None = Field(default=None, description="'local': the service's own judge.")
    base_url: str | None = Field(default=None, description="An OpenAI-compatible endpoint, e.g. .../v1.")
    model: str | None = Field(default=None, description="The model name that endpoint serves.")
    weight: float = Field(default=1.0, gt=0, le=100)
    temperature: float | None = Field(default=None, ge=0, le=2)
    prompt_template: str | None = Field(default=None, min_length=1, max_length=64)
    api_key: SecretStr | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=3600)

    @model_validator(mode="after")
    def _one_kind(self) -> JurorSpec:
        if self.engine == "local":
            extra = [f for f in ("base_url", "model", "api_key", "timeout_s") if getattr(self, f) is not None]
            if extra:
                raise ValueError(f"judge {self.name!r}: engine 'local' takes no {', '.join(extra)}")
        elif self.base_url is None or self.model is None:
            raise ValueError(
                f"judge {self.name!r}: give base_url and model (an OpenAI-compatible endpoint), "
                'or engine "local"'
            )
        return self

    @property
    def local(self) -> bool:
        return self.engine == "local"


_SPECS = TypeAdapter(list[JurorSpec])


def parse_jury(setting: str) -> list[JurorSpec]:
    """The judges of JUDGE_JURY (inline JSON, or the path of a JSON file), in order. ValueError says what
    to fix."""
    specs, source = named_list(setting, "JUDGE_JURY", _SPECS, "judge")
    if not specs:
        raise ValueError(f"{source}: a jury needs at least one judge")
    if sum(spec.local for spec in specs) > 1:
        raise ValueError(f'{source}: at most one judge may be engine "local" (the service runs one engine)')
    return specs
