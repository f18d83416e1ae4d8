"""Calibration of a grader's scores: pass rates at fixed thresholds and a recommended pass threshold.

Pure: groups of answer scores in, a report out. A group is the list of its answers' overall scores,
None for an unscored answer. Unscored answers are left out of every rate and counted on their own, so a
judge failure never looks like a failing answer.

* Pass rate at threshold t: the share of scored answers with score >= t (with a 1e-9 tolerance, because
  weighted means such as 0.55 are not exact in binary floating point).
* Recommended threshold: among 0.50, 0.55, ..., 0.95, those where 25-50% of scored answers fail
  (both ends included); of these, the one whose fail rate is closest to 37.5%, the middle of the band.
  Equal distances go to the lower threshold, the more lenient of two equally good cuts. None, with a
  reason, when no threshold lands in the band.
* Flat groups: at least two scored answers, all with the same score. GRPO's advantages are all zero in
  such a group, so it teaches the policy nothing. Groups with fewer than two scored answers teach nothing
  either; they are counted apart, because their cause (judge failures, groups of one) differs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from judge_service.schemas import CalibrationReport, Recommendation, ThresholdRate

THRESHOLDS: tuple[float, ...] = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))
FAIL_BAND = (0.25, 0.50)
TARGET_FAIL_RATE = 0.375
_TOLERANCE = 1e-9

GroupScores = Sequence[float | None]


def is_flat(scored: Sequence[float]) -> bool:
    """Two or more scores, all the same (to the grader's rounding): GRPO advantages all zero."""
    return len(scored) >= 2 and max(scored) - min(scored) <= _TOLERANCE


def calibrate(groups: Iterable[GroupScores]) -> CalibrationReport:
    scores: list[float] = []
    n_groups = unscored = flat = too_few = 0
    for group in groups:
        n_groups += 1
        scored = [s for s in group if s is not None]
        unscored += len(group) - len(scored)
        scores.extend(scored)
        if len(scored) < 2:
            too_few += 1
        elif is_flat(scored):
            flat += 1
    rates = [_rate(t, scores) for t in THRESHOLDS]
    notes = []
    if any(s > 1 + _TOLERANCE for s in scores):
        notes.append(
            "some scores exceed 1 (an unnormalized blend); the 0.50-0.95 thresholds assume 0-1 scores"
        )
    return CalibrationReport(
        groups=n_groups,
        scored_answers=len(scores),
        unscored_answers=unscored,
        mean_score=sum(scores) / len(scores) if scores else None,
        thresholds=rates,
        recommendation=recommend(rates),
        flat_groups=flat,
        flat_group_share=flat / n_groups if n_groups else None,
        too_few_scored_groups=too_few,
        too_few_scored_share=too_few / n_groups if n_groups else None,
        notes=notes,
    )


def _rate(threshold: float, scores: list[float]) -> ThresholdRate:
    passed = sum(1 for s in scores if s >= threshold - _TOLERANCE)
    total = len(scores)
    return ThresholdRate(
        threshold=threshold,
        passed=passed,
        failed=total - passed,
        pass_rate=passed / total if total else 0.0,
        fail_rate=(total - passed) / total if total else 0.0,
    )


def recommend(rates: Sequence[ThresholdRate]) -> Recommendation:
    """The threshold rule from the module docstring; `rates` in increasing threshold order."""
    if not rates or rates[0].passed + rates[0].failed == 0:
        return Recommendation(threshold=None, fail_rate=None, reason="no scored answers")
    low, high = FAIL_BAND
    in_band = [r for r in rates if low - _TOLERANCE <= r.fail_rate <= high + _TOLERANCE]
    if in_band:
        # min() keeps the first of equals, and rates ascend, so ties go to the lower threshold.
        best = min(in_band, key=lambda r: abs(r.fail_rate - TARGET_FAIL_RATE))
        return Recommendation(
            threshold=best.threshold,
            fail_rate=best.fail_rate,
            reason=f"fails {best.fail_rate:.0%} of scored answers, the closest to 37.5% in the 25-50% band",
        )
    first, last = rates[0], rates[-1]
    if first.fail_rate > high:
        reason = (
            f"even at {first.threshold:.2f} {first.fail_rate:.0%} of answers fail: the grader is strict "
            "or the policy is weak; no threshold in the 25-50% band"
        )
    elif last.fail_rate < low:
        reason = (
            f"even at {last.threshold:.2f} only {last.fail_rate:.0%} of answers fail: the grader is "
            "lenient; no threshold in the 25-50% band"
        )
    else:
        below = max((r for r in rates if r.fail_rate < low), key=lambda r: r.threshold)
        above = min((r for r in rates if r.fail_rate > high), key=lambda r: r.threshold)
        reason = (
            f"the fail rate jumps from {below.fail_rate:.0%} at {below.threshold:.2f} to "
            f"{above.fail_rate:.0%} at {above.threshold:.2f}: scores are too coarse for a threshold "
            "in the 25-50% band"
        )
    return Recommendation(threshold=None, fail_rate=None, reason=reason)


# --------------------------------------------------------------------------- reading judgements


def group_scores(doc: Mapping[str, Any]) -> list[float | None] | None:
    """The answer scores of one judgement document, or None when the document holds no judgement.

    Accepts a judge response, a stored judgement, a batch item or a judge-file output line
    (`{"judgement": {...}}`); an error line (`{"error": ...}`) holds no judgement.
    """
    judgement = doc.get("judgement", doc)
    if not isinstance(judgement, Mapping):
        return None
    answers = judgement.get("answers")
    if not isinstance(answers, list):
        return None
    return [_answer_score(a) for a in answers if isinstance(a, Mapping)]


def _answer_score(answer: Mapping[str, Any]) -> float | None:
    score = answer.get("score")
    if answer.get("status", "scored") != "scored" or isinstance(score, bool):
        return None
    if isinstance(score, int | float) and math.isfinite(score):
        return float(score)
    return None


def groups_from_jsonl(lines: Iterable[str]) -> tuple[list[list[float | None]], int]:
    """Groups from JSON lines of judgements, and how many non-blank lines held none (errors, junk)."""
    groups: list[list[float | None]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        scores = group_scores(doc) if isinstance(doc, dict) else None
        if scores is None:
            skipped += 1
        else:
            groups.append(scores)
    return groups, skipped
