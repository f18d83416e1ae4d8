"""The graders slice: graders written as code (judging/code/) and RFT grader configs (judging/rft/)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class GraderSettings(BaseSettings):
    """The graders slice: graders written as code (judging/code/) and RFT grader configs (judging/rft/)."""

    model_config = SettingsConfigDict(env_prefix="JUDGE_", extra="ignore")

    code_graders: str | None = Field(
        default=None,
        description="Graders written as code: a JSON list of {name, target: 'package.module:function', "
        "signature: rft|verl|group, timeout_s, memory_mb, score_range}, inline or the path of a JSON file "
        "(docs/graders/code.md).",
    )
    rft_graders: str | None = Field(
        default=None,
        description="RFT grader configs as named graders: a JSON object of name -> grader config "
        "(string_check, text_similarity, score_model, label_model, multi, python), inline or a file's path.",
    )
    template_timeout_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="How long an RFT grader template that is more than text and lookups may take to render "
        "(or check) in its render process; past it the process is killed and the template is "
        "`invalid_variable_error`. It is also the render time of all of one run's (or validate's) templates "
        "together: past it the rest are `invalid_variable_error` without rendering.",
    )
    template_max_output_chars: int = Field(
        default=1_000_000,
        ge=1000,
        le=100_000_000,
        description="The most characters one grader's templates may render together; more is "
        "`invalid_variable_error`.",
    )
    template_memory_mb: int = Field(
        default=256,
        ge=32,
        le=65_536,
        description="Memory a template render process may take beyond what it holds at start (a hard cap).",
    )
    template_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Render processes for templates that are more than text and lookups (started on first "
        "use); those are rendered off the event loop, plain ones in-process.",
    )
    code_workers: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Worker processes that run graders written as code. None: the CPU count, at most 8.",
    )
    allow_inline_python: bool = Field(
        default=False,
        description="Run `python` RFT graders, whose source comes with the request or config. Off by "
        "default. Each call runs in a fresh sandboxed worker; a caller needs a key with the `python` (or "
        "`admin`) scope.",
    )
    code_sandbox: Literal["bubblewrap", "process"] = Field(
        default="bubblewrap",
        description="Where grader code runs: `bubblewrap` (namespaces of its own: no network, no view of "
        "the service's files, processes or environment; needs Debian's bubblewrap and user namespaces) or "
        "`process` (weaker: the same environment and hard limits in a plain child process, which can read "
        "what the service's user can, connect out and signal the service). The service refuses to start "
        "code graders when bubblewrap cannot run, unless this is `process`.",
    )

    def resolved_code_workers(self) -> int:
        return self.code_workers or min(8, os.cpu_count() or 1)
