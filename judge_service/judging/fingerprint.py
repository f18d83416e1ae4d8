"""Grader fingerprints: a short hash of everything that decides a judgement's scores.

Two judgements with the same fingerprint were scored the same way, so their scores are comparable; a
changed prompt template, judge model, rubric, weight, blend or sampling setting changes it. Hashed: the
plan's grader name and its (grader, weight) terms, and what each of its graders says decides its scores
(Grader.config): for the LLM judge the model, the prompt version (a hash of the templates),
temperature, reason_max_chars, parse_retries, answer shuffling, the number of orders and the criteria
with their weights; for rule graders the rule options. Left out: what varies per group or does not
change scores (seed, deadline, run, step, the answers). The canonical form has not changed since
fingerprints were introduced, so judgements stored by earlier builds compare with new ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from judge_service.judging.plan import GradingPlan

FINGERPRINT_CHARS = 16


def grader_fingerprint(plan: GradingPlan) -> str:
    return fingerprint(plan.config())


def fingerprint(config: Mapping[str, Any]) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_CHARS]
