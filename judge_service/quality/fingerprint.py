"""Grader fingerprints: a short hash of everything that decides a judgement's scores.

Two judgements with the same fingerprint were scored the same way, so their scores are comparable; a
changed prompt template, judge model, rubric, weight, blend or sampling setting changes it. Included:
the grader name and its (grader, weight) terms; for plans that use the judge, the judge model, the prompt
version (a hash of the templates), temperature, reason_max_chars, parse_retries, answer shuffling, the
number of orders and the criteria with their weights; for plans with rule graders, the rule options.
Left out: what varies per group or does not change scores (seed, deadline, run, step, the answers).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.criteria import resolve_criteria
from judge_service.graders.composite import GradingPlan
from judge_service.graders.llm_judge import LLMJudge
from judge_service.schemas import Criterion, JudgeRequest

FINGERPRINT_CHARS = 16


def grader_fingerprint(plan: GradingPlan, request: JudgeRequest, judge: LLMJudge) -> str:
    """The fingerprint of how `request` is scored under `plan` by this service."""
    config = grader_config(
        grader=plan.grader,
        terms=plan.terms,
        request=request,
        criteria=resolve_criteria(request.criteria),
        judge=judge_config(judge) if plan.uses_judge else None,
    )
    return fingerprint(config)


def judge_config(judge: LLMJudge) -> dict[str, Any]:
    s = judge.settings
    return {
        "model": judge.model_name,
        "prompt_version": judge.prompt_version,
        "temperature": s.temperature,
        "reason_max_chars": s.reason_max_chars,
        "parse_retries": s.parse_retries,
        "shuffle_answers": s.shuffle_answers,
    }


def grader_config(
    *,
    grader: str,
    terms: Sequence[tuple[str, float]],
    request: JudgeRequest,
    criteria: Sequence[Criterion],
    judge: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The canonical description the fingerprint hashes; `judge` is judge_config() when it is used."""
    config: dict[str, Any] = {"grader": grader, "terms": [[name, weight] for name, weight in terms]}
    if judge is not None:
        config["judge"] = dict(judge)
        config["orders"] = request.orders
        config["criteria"] = [c.model_dump() for c in criteria]
    if any(name != "judge" for name, _ in terms):
        config["options"] = request.options.model_dump()
    return config


def fingerprint(config: Mapping[str, Any]) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_CHARS]
