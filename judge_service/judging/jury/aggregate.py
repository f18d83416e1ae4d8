"""How a jury's scores for one answer become one score, and how far its judges disagree.

Scores are 0-1 (a judge's weighted mean of criterion scores); weights are the judges' JUDGE_JURY weights.

- mean: the weighted mean.
- median: the weighted median: the smallest score at which the weights of the scores at or below it
  reach half the total; where they reach exactly half, the mean of that score and the next (so two
  judges of equal weight give their mean, as the plain median does).
- min: the lowest score (the strictest judge decides; weights play no part).
- mean_minus_std: the weighted mean less `factor` times the weighted (population) standard deviation,
  at least 0: an answer the judges dispute scores lower than one they agree on.

Disagreement is read in marks, the judges' own scale: spread = (highest - lowest score) x 4, so 1.0 is
one mark apart on 1-5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Aggregate = Literal["mean", "median", "min", "mean_minus_std"]
MARKS_PER_SCORE = 4.0  # a 0-1 score spans the four steps of the 1-5 scale


def aggregate(scores: Sequence[tuple[float, float]], how: Aggregate, factor: float = 1.0) -> float:
    """One score from (score, weight) pairs (at least one; weights > 0)."""
    if not scores:
        raise ValueError("no scores to aggregate")
    if how == "min":
        return min(score for score, _ in scores)
    if how == "median":
        return _weighted_median(scores)
    mean = _weighted_mean(scores)
    if how == "mean":
        return mean
    total = sum(weight for _, weight in scores)
    variance = sum(weight * (score - mean) ** 2 for score, weight in scores) / total
    return max(0.0, mean - factor * math.sqrt(variance))


def spread_marks(scores: Sequence[float]) -> float | None:
    """How many marks apart the highest and the lowest score are; None below two scores."""
    if len(scores) < 2:
        return None
    return (max(scores) - min(scores)) * MARKS_PER_SCORE


def _weighted_mean(scores: Sequence[tuple[float, float]]) -> float:
    return sum(score * weight for score, weight in scores) / sum(weight for _, weight in scores)


def _weighted_median(scores: Sequence[tuple[float, float]]) -> float:
    ordered = sorted(scores)
    half = sum(weight for _, weight in ordered) / 2
    below = 0.0
    for i, (score, weight) in enumerate(ordered):
        below += weight
        if math.isclose(below, half) and i + 1 < len(ordered):
            return (score + ordered[i + 1][0]) / 2
        if below > half:
            return score
    return ordered[-1][0]
