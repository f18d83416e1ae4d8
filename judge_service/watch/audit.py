"""What the audit judge's records say about a run: which groups to audit, and the run's figures and onset.

Which groups: a systematic sample per (run, step), not a coin per group. The k-th group of a step stored
here is audited when floor(k * rate + u) moves past floor((k - 1) * rate + u), with u drawn from the run
and step; a step of n groups then gets floor(n * rate) or one more audits, never the binomial spread a coin
gives (64 groups at 5%: 3.2 on average, and 1 or 6 often). The order groups arrive in is the trainer's,
which has nothing to do with how the judge marks them, so the sample is unbiased as a coin's would be.
u comes from a secret drawn when the process starts, so no caller can tell which arrivals of a step
are audited (and send cheap groups where the audit would take them).

The figures (quality/divergence.py) are stored per audited group; a step's are the means over its groups,
and the run's onset is the CUSUM (quality/onset.py) fed every audited group of the run in step order.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from judge_service.quality.divergence import AnswerScores, GroupDivergence, step_divergence
from judge_service.quality.onset import WARMUP, DivergenceDetector
from judge_service.schemas import AnswerResult, AuditOnset, RunAudit, StepAudit

STEPS_KEPT = 4096  # (run, step) counters the sampler keeps; the oldest go first


class StepSampler:
    """Draws `rate` of each (run, step)'s groups (module docstring), counting the groups seen here."""

    def __init__(self, rate: float, *, secret: bytes | None = None) -> None:
        if not 0 < rate <= 1:
            raise ValueError(f"an audit rate is in (0, 1], not {rate}")
        self._rate = rate
        self._secret = os.urandom(16) if secret is None else secret
        self._seen: OrderedDict[tuple[str, int], int] = OrderedDict()

    def draw(self, run_id: str, step: int) -> bool:
        key = (run_id, step)
        k = self._seen.pop(key, 0)
        self._seen[key] = k + 1
        if len(self._seen) > STEPS_KEPT:
            self._seen.popitem(last=False)
        u = _offset(self._secret, run_id, step)
        return math.floor((k + 1) * self._rate + u) > math.floor(k * self._rate + u)


def _offset(secret: bytes, run_id: str, step: int) -> float:
    digest = hashlib.blake2b(f"{run_id}\0{step}".encode(), digest_size=8, key=secret).digest()
    return int.from_bytes(digest, "big") / 2**64


def answer_scores(answer: AnswerResult) -> AnswerScores:
    """One stored answer's scores as the divergence figures read them."""
    criteria = answer.criteria or {}
    return AnswerScores(
        answer.score, {name: mark.score for name, mark in criteria.items() if mark.score is not None}
    )


def grade_scores(score: float | None, criteria: Mapping[str, Mapping[str, object]] | None) -> AnswerScores:
    """One answer as a grader graded it (AnswerGrade's score and per-criterion fields)."""
    per_criterion = {
        name: float(value)
        for name, fields in (criteria or {}).items()
        if isinstance(value := fields.get("score"), int | float)
    }
    return AnswerScores(score, per_criterion)


def audit_summary(groups: Sequence[GroupDivergence], *, limit: int) -> tuple[dict[int, StepAudit], RunAudit]:
    """A run's audited groups (in step order, at most `limit` read): each step's means, and the run's
    count and onset, the CUSUM fed every group in step order."""
    by_step = {
        s.step: StepAudit(
            groups=s.groups,
            rank_correlation=s.rank_correlation,
            gap=s.gap,
            criterion_gaps=dict(s.criterion_gaps),
            best_disagreement=s.best_disagreement,
        )
        for s in step_divergence(groups)
    }
    detector = DivergenceDetector()
    for group in groups:
        detector.add(group.step, group.gap, group.rank_correlation)
    run = RunAudit(
        audited_groups=len(groups),
        complete=len(groups) < limit,
        onset=onset_of(detector),
        warmup_groups=WARMUP,
    )
    return by_step, run


def onset_of(detector: DivergenceDetector) -> AuditOnset | None:
    onset = detector.onset
    if onset.figure is None or onset.detected_at is None:
        return None
    return AuditOnset(figure=onset.figure, began_at_step=onset.began_at, detected_at_step=onset.detected_at)
