"""Grader fingerprints: a short hash of everything that decides a judgement's scores.

Two judgements with the same fingerprint were scored the same way, so their scores are comparable; a
changed prompt template, judge model, rubric, weight, blend or sampling setting changes it. Hashed: the
plan's grader name and its (grader, weight) terms, and what each of its graders says decides its scores
(Grader.config): for the LLM judge the model, the prompt version (a hash of the templates),
temperature, reason_max_chars, parse_retries, answer shuffling, the number of orders and the criteria
with their weights, and, only where they differ from the original behaviour, the decoding
(`per_answer`), reasons constrained to words, and scoring from expected marks (with the number of
log-probabilities asked); for rule graders the rule options. Left out: what varies per group or does not
change scores (seed, deadline, run, step, the answers). The canonical form has not changed since
fingerprints were introduced (options added later appear only when not at their original value), so
judgements stored by earlier builds compare with new ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping
from typing import Any

from pydantic import BaseModel

from judge_service.judging.plan import GradingPlan
from judge_service.schemas import canonical_json

FINGERPRINT_CHARS = 16
# Options larger than this (a big schema, hundreds of labels) are not kept as cache keys.
_CACHED_OPTIONS_CHARS = 4096


def grader_fingerprint(plan: GradingPlan) -> str:
    return fingerprint(plan.config())


class FingerprintCache:
    """Fingerprints by (graders, weights, options), which most groups of a run share: building and hashing
    the canonical JSON costs more than the rest of the plan. Bounded; the oldest entry goes first."""

    def __init__(self, max_entries: int = 1024) -> None:
        self._max_entries = max_entries
        self._known: dict[Hashable, str] = {}

    def of(self, plan: GradingPlan) -> str:
        key = _cache_key(plan)
        if key is None:
            return grader_fingerprint(plan)
        found = self._known.get(key)
        if found is None:
            if len(self._known) >= self._max_entries:
                self._known.pop(next(iter(self._known)))
            found = self._known[key] = grader_fingerprint(plan)
        return found


def _cache_key(plan: GradingPlan) -> Hashable | None:
    parts: list[Hashable] = [plan.grader]
    for term in plan.terms:
        options = _options_key(term.options)
        if options is None:
            return None
        parts.append((term.grader, term.weight, options))  # the grader object: two judges may share a name
    if plan.cascade is not None:
        rule = plan.cascade.rule
        options = _options_key(rule.options)
        if options is None:
            return None
        parts.append(("cascade", rule.grader, options, plan.cascade.judge, plan.cascade.threshold))
    return tuple(parts)


def _options_key(options: Any) -> Hashable | None:
    if isinstance(options, BaseModel):  # rule options: unhashable, keyed by their JSON when small
        dumped = options.model_dump_json()
        return dumped if len(dumped) <= _CACHED_OPTIONS_CHARS else None
    try:
        hash(options)
    except TypeError:
        return None
    return options


def fingerprint(config: Mapping[str, Any]) -> str:
    canonical = canonical_json(config, ascii_only=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_CHARS]
