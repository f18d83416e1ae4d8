"""JUDGE_AUDIT: the audit judge, an independent judge that re-judges a share of each run's groups.

The setting is one judge shaped as a JUDGE_JURY entry, inline or in a file (its path):

  {"name": "audit", "base_url": "http://llama:8000/v1", "model": "meta-llama/Llama-3.1-8B-Instruct"}
  {"name": "second-look", "engine": "local", "prompt_template": "my_audit"}   (a folder in JUDGE_PROMPTS_DIR)

or the name of a JUDGE_JURY judge, which is then built again for the audit. An endpoint's judge gets a
backend and readiness of its own, which app.py follows as it follows a jury's (never fatal); the local
judge shares the service's engine, its readiness and nothing else: the audit holds no admission slot of
the training judge's (watch/auditor.py yields to training groups instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from judge_service.backends.base import JudgeBackend
from judge_service.backends.readiness import Readiness
from judge_service.config import Settings
from judge_service.judging.code.spec import describe_invalid, json_setting
from judge_service.judging.jury.build import Endpoint, judge_of
from judge_service.judging.jury.spec import JUROR_NAME_PATTERN, JurorSpec, parse_jury
from judge_service.judging.llm.judge import LLMJudge
from judge_service.metrics import JudgeMetrics

AUDIT = "audit"


@dataclass(frozen=True)
class AuditJudge:
    name: str
    judge: LLMJudge
    endpoint: Endpoint | None  # None: the service's own engine


def parse_audit(setting: str, jury: str | None) -> JurorSpec:
    """The judge JUDGE_AUDIT names (module docstring). ValueError says what to fix."""
    text = setting.strip()
    if re.fullmatch(JUROR_NAME_PATTERN, text):
        named = [spec for spec in parse_jury(jury) if spec.name == text] if jury else []
        if not named:
            raise ValueError(
                f"JUDGE_AUDIT names {text!r}, which is no JUDGE_JURY judge: name one of the jury's "
                'judges, or give the judge itself, e.g. {"name": "audit", "base_url": ..., "model": ...}'
            )
        return named[0]
    if not text.startswith("{") and not Path(text).expanduser().is_file():
        # Not quoted back: a malformed value may hold an api_key.
        raise ValueError(
            "JUDGE_AUDIT is neither a JSON object, a JUDGE_JURY judge's name nor a readable file"
        )
    raw, source = json_setting(text, "JUDGE_AUDIT", "object")
    try:
        return JurorSpec.model_validate(raw)
    except ValidationError as exc:
        # Not pydantic's own text: that quotes the entry given, api_key included.
        raise ValueError(f"{source}: {describe_invalid(exc)}") from None


def build_audit_judge(
    settings: Settings,
    metrics: JudgeMetrics,
    *,
    local_backend: JudgeBackend,
    local_readiness: Readiness,
) -> AuditJudge | None:
    """The judge of JUDGE_AUDIT, or None without one."""
    if settings.audit is None:
        return None
    spec = parse_audit(settings.audit, settings.jury)
    judge, endpoint = judge_of(
        spec, settings, metrics, local_backend=local_backend, local_readiness=local_readiness, role=AUDIT
    )
    return AuditJudge(spec.name, judge, endpoint)
