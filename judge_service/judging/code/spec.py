"""JUDGE_CODE_GRADERS: which functions are graders, how they are called, and their limits.

The setting is a JSON list, inline or in a file (its path):

  [{"name": "support_facts", "target": "my_graders.support:grade", "signature": "rft",
    "timeout_s": 5, "memory_mb": 256, "processes": 32, "file_mb": 64, "network": false, "env": []}]

Each grader runs in workers of its own, in the sandbox (sandbox.py), with these hard limits; `env` names
the service's environment variables it is given (it sees no others), `network` lets it connect out.

Signatures (what the function is given, per answer unless `group`):
  rft    grade(sample, item) -> float; sample = {"output_text": answer, "output_json": the answer parsed
         as JSON, or None}; item = the request's `item` ({} when absent)
  verl   compute_score(data_source, solution_str, ground_truth, extra_info) -> float | dict; data_source
         = item["data_source"] ("" when absent), ground_truth = the group's reference, extra_info = item;
         a dict's "score" is the reward, its other keys are explanation fields that never change it
  group  grade(group) -> list (one result per answer, in order) | dict (answer id -> result); group =
         {"conversation", "reference", "answers": [{"id", "text"}], "item"}; a result is a float or a
         dict with "score"
Async functions too. `score_range` maps what the function returns onto 0-1 (verl rewards in [-1, 1]:
[-1, 1]); a result outside it leaves the answer unscored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from judge_service.judging.code.sandbox import WorkerLimits
from judge_service.redaction import describe_invalid

Signature = Literal["rft", "verl", "group"]
GRADER_NAME_PATTERN = r"^[a-z][a-z0-9_\-]{0,63}$"


class CodeGraderSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=GRADER_NAME_PATTERN, description="The grader's name in requests.")
    target: str = Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$",
        description="package.module:function, importable where the service runs.",
    )
    signature: Signature = "rft"
    timeout_s: float = Field(default=10.0, gt=0, le=600, description="Per call (per answer; per group).")
    memory_mb: int = Field(
        default=512, ge=16, le=65_536, description="Address space the worker may add, its imports included."
    )
    processes: int = Field(default=32, ge=2, le=4096, description="Processes and threads, the worker's own.")
    file_mb: int = Field(default=64, ge=1, le=65_536, description="The largest file, and the size of /tmp.")
    network: bool = Field(default=False, description="Whether the grader may open network connections.")
    env: tuple[str, ...] = Field(
        default=(),
        max_length=64,
        description="Names of the service's environment variables the grader is given (no others are).",
    )
    score_range: tuple[float, float] = Field(
        default=(0.0, 1.0), description="What the function returns for the worst and the best answer."
    )

    @model_validator(mode="after")
    def _ordered_range(self) -> CodeGraderSpec:
        low, high = self.score_range
        if not low < high:
            raise ValueError(
                f"score_range must be [lowest, highest] with lowest < highest, got {low}, {high}"
            )
        return self

    @property
    def limits(self) -> WorkerLimits:
        return WorkerLimits(
            memory_mb=self.memory_mb,
            processes=self.processes,
            file_mb=self.file_mb,
            network=self.network,
            env=self.env,
        )

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    @property
    def function(self) -> str:
        return self.target.partition(":")[2]


_SPECS = TypeAdapter(list[CodeGraderSpec])


def json_setting(setting: str, variable: str, kind: Literal["list", "object"]) -> tuple[Any, str]:
    """A setting given as inline JSON or as the path of a JSON file (JUDGE_CODE_GRADERS, JUDGE_RFT_GRADERS):
    the parsed value, and how errors name its source (the variable, and the file when there is one).
    ValueError says what to fix."""
    text = setting.strip()
    source = variable
    if not text.startswith("[" if kind == "list" else "{"):
        path = Path(text).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise ValueError(f"{variable}: neither a JSON {kind} nor a readable file ({exc})") from exc
        source = f"{variable} ({path})"
    try:
        return json.loads(text), source
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON ({exc})") from exc


def parse_code_graders(setting: str) -> list[CodeGraderSpec]:
    """The specs of JUDGE_CODE_GRADERS (inline JSON, or the path of a JSON file). ValueError says what
    to fix."""
    specs, _ = named_list(setting, "JUDGE_CODE_GRADERS", _SPECS, "grader")
    return specs


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def named_list(setting: str, variable: str, specs: TypeAdapter[list[N]], what: str) -> tuple[list[N], str]:
    """A setting that is a JSON list of named entries (JUDGE_CODE_GRADERS, JUDGE_JURY), validated, names
    unique; and how errors name its source. ValueError says what to fix."""
    raw, source = json_setting(setting, variable, "list")
    try:
        parsed = specs.validate_python(raw)
    except ValidationError as exc:
        # Not pydantic's own text, nor chained to it: that quotes each entry given, api_key included.
        raise ValueError(f"{source}: {describe_invalid(exc)}") from None
    names = [entry.name for entry in parsed]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{source}: each {what} name must be unique; repeated: {', '.join(repeated)}")
    return parsed, source
