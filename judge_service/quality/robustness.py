"""How hard a grader is to game: the robustness table of `judge-service eval --canaries`, pure computations
over labelled groups judged with a canary of each kind (watch/canaries.py).

Per canary kind, over the groups where the kind applied and both the canary and an answer were scored:
- `outranks_median`: the canary scored above the median of the group's scored answers (what the live
  run's `canary_outrank_share` counts);
- `outranks_best_correct`: over groups with a scored correct answer (label true, or the group's top
  numeric label), the canary scored above the best of them: the grader would have preferred the planted
  answer to the right one;
- `reaches_best_correct`: the same, ties included: a grader that marks everything alike never outranks,
  but is no harder to game, and this shows it.
Each with its 95% Wilson interval (one trial per group: a proportion, not a bootstrap).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from judge_service.quality.evaluation import Figure, JudgedAnswer

Z_95 = 1.959964


@dataclass(frozen=True)
class CanaryTrial:
    """One labelled group judged with one canary."""

    index: int  # the group's line in the data file, from 0
    kind: str
    canary_score: float | None  # None: the kind did not apply to the group, or the canary was unscored
    answers: tuple[JudgedAnswer, ...]
    judgement_id: str | None = None


@dataclass(frozen=True)
class KindFigures:
    trials: int  # groups judged with this kind of canary
    compared: int  # of them, with a scored canary and at least one scored answer
    with_correct: int  # of those, with a scored correct answer
    outranks_median: Figure
    outranks_best_correct: Figure
    reaches_best_correct: Figure


def wilson(successes: int, n: int) -> Figure:
    """The share and its 95% Wilson score interval; a null figure for n = 0."""
    if n == 0:
        return Figure(None)
    p = successes / n
    z2 = Z_95 * Z_95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z_95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Figure(p, max(0.0, centre - half), min(1.0, centre + half))


def best_correct(answers: Sequence[JudgedAnswer]) -> float | None:
    """The best score among the scored correct answers (label true; with numeric labels, the group's top
    label), or None when there is none."""
    labelled = [a for a in answers if a.score is not None]
    if any(isinstance(a.label, bool) for a in labelled):
        correct = [a.score for a in labelled if a.label is True]
    else:
        top = max((float(a.label) for a in labelled), default=None)
        correct = [a.score for a in labelled if top is not None and float(a.label) == top]
    return max((s for s in correct if s is not None), default=None)


def kind_figures(trials: Sequence[CanaryTrial]) -> KindFigures:
    above_median = above_best = at_best = compared = with_correct = 0
    for trial in trials:
        scores = [a.score for a in trial.answers if a.score is not None]
        if trial.canary_score is None or not scores:
            continue
        compared += 1
        above_median += trial.canary_score > statistics.median(scores)
        best = best_correct(trial.answers)
        if best is not None:
            with_correct += 1
            above_best += trial.canary_score > best
            at_best += trial.canary_score >= best
    return KindFigures(
        trials=len(trials),
        compared=compared,
        with_correct=with_correct,
        outranks_median=wilson(above_median, compared),
        outranks_best_correct=wilson(above_best, with_correct),
        reaches_best_correct=wilson(at_best, with_correct),
    )


def robustness(trials: Sequence[CanaryTrial]) -> dict[str, KindFigures]:
    """The figures per canary kind, in the order the kinds first appear."""
    kinds = dict.fromkeys(t.kind for t in trials)
    return {kind: kind_figures([t for t in trials if t.kind == kind]) for kind in kinds}
