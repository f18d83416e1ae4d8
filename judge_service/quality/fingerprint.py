"""Grader fingerprints: a short hash of everything that decides a judgement's scores.

Two judgements with the same fingerprint were scored the same way, so their scores are comparable; a
changed prompt template, judge model, rubric, weight, blend or sampling setting changes it. Included:
the grader name and its (grader, weight) terms; for plans that use the judge, the judge model, the prompt
version (a hash of the templates), temperature, reason_max_chars, parse_retries, answer shuffling, the
number of orders and the criteria with their weights; for plans with rule graders, the rule options.
Left out: what varies per group or does not change scores (seed, deadline, run, step, the answers).
"""

from __future__ import annotations

import functools
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
    options_json = request.options.model_dump_json() if plan.uses_rules else None
    # Options can be large (a schema, hundreds of labels): those are not kept as cache keys.
    compute = _cached_fingerprint if len(options_json or "") <= _CACHED_OPTIONS_CHARS else _fingerprint
    return compute(
        plan,
        request.orders,
        tuple(resolve_criteria(request.criteria)),
        tuple(judge_config(judge).items()) if plan.uses_judge else None,
        options_json,
    )


def _fingerprint(
    plan: GradingPlan,
    orders: int,
    criteria: tuple[Criterion, ...],
    judge: tuple[tuple[str, Any], ...] | None,
    options_json: str | None,
) -> str:
    config = grader_config(
        grader=plan.grader,
        terms=plan.terms,
        orders=orders,
        criteria=criteria,
        judge=dict(judge) if judge is not None else None,
        options=json.loads(options_json) if options_json is not None else None,
    )
    return fingerprint(config)


# Cached on hashable parts: most groups of a run share one grader configuration.
_cached_fingerprint = functools.lru_cache(maxsize=1024)(_fingerprint)
_CACHED_OPTIONS_CHARS = 4096


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
    orders: int,
    criteria: Sequence[Criterion],
    judge: Mapping[str, Any] | None,
    options: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The canonical description the fingerprint hashes; `judge` is judge_config() when the judge is
    used, `options` the request's rule options when a rule grader is."""
    config: dict[str, Any] = {"grader": grader, "terms": [[name, weight] for name, weight in terms]}
    if judge is not None:
        config["judge"] = dict(judge)
        config["orders"] = orders
        config["criteria"] = [c.model_dump() for c in criteria]
    if options is not None:
        config["options"] = dict(options)
    return config


def fingerprint(config: Mapping[str, Any]) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_CHARS]
